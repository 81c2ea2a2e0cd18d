//! What the attributes add to compile time: the models are copied into a crate of their own
//! and built in release mode, in a fresh target directory, with the `ad` feature (the cotan
//! attributes, hence cotan and its dependencies) and without it (plain Rust, no
//! dependencies). Builds of the crate alone (its dependencies already built) are repeated
//! and the median taken.

use crate::expand::SOURCES;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const MOD_RS: &str = include_str!("models/mod.rs");

fn write_crate(dir: &Path) -> std::io::Result<()> {
    let cotan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cotan");
    let cotan = cotan.canonicalize()?;
    std::fs::create_dir_all(dir.join("src/models"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"cotan-bench-models\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [features]\nad = [\"dep:cotan\"]\n\n[dependencies]\ncotan = {{ path = {:?}, optional = true }}\n\n[workspace]\n",
            cotan.display().to_string()
        ),
    )?;
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    if lock.exists() {
        std::fs::copy(lock, dir.join("Cargo.lock"))?;
    }
    std::fs::write(dir.join("src/lib.rs"), "//! The benchmark models alone.\npub mod models;\n")?;
    std::fs::write(dir.join("src/models/mod.rs"), MOD_RS)?;
    for (name, src) in SOURCES {
        std::fs::write(dir.join("src/models").join(name), src)?;
    }
    Ok(())
}

fn cargo(dir: &Path, target: &Path, args: &[&str]) -> Result<f64, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let t = Instant::now();
    let out = Command::new(cargo)
        .args(args)
        .arg("--target-dir")
        .arg(target)
        .current_dir(dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("cargo {} failed:\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(t.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the builds and returns a markdown table.
pub fn measure() -> Result<String, String> {
    let dir: PathBuf = std::env::temp_dir().join(format!("cotan-bench-compile-time-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_crate(&dir).map_err(|e| e.to_string())?;
    let (t_ad, t_plain) = (dir.join("target-ad"), dir.join("target-plain"));
    eprintln!("compile time: clean release builds in {} (a few minutes)", dir.display());
    let full_ad = cargo(&dir, &t_ad, &["build", "--release", "--features", "ad"])?;
    let full_plain = cargo(&dir, &t_plain, &["build", "--release"])?;
    let mut alone_ad = vec![];
    let mut alone_plain = vec![];
    for _ in 0..3 {
        cargo(&dir, &t_ad, &["clean", "--release", "-p", "cotan-bench-models"])?;
        alone_ad.push(cargo(&dir, &t_ad, &["build", "--release", "--features", "ad"])?);
        cargo(&dir, &t_plain, &["clean", "--release", "-p", "cotan-bench-models"])?;
        alone_plain.push(cargo(&dir, &t_plain, &["build", "--release"])?);
    }
    let (alone_ad, alone_plain) = (median(alone_ad), median(alone_plain));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(format!(
        "\n| clean release build of the models | without attributes | with attributes | ratio |\n|---|--:|--:|--:|\n\
         | the models crate alone (dependencies already built; median of 3) | {alone_plain:.2} s | {alone_ad:.2} s | {:.2} |\n\
         | the models crate and its dependencies (cotan's macros, syn, ...) | {full_plain:.2} s | {full_ad:.1} s | {:.1} |\n",
        alone_ad / alone_plain,
        full_ad / full_plain
    ))
}
