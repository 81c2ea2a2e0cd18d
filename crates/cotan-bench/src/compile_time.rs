//! What the attributes add to compile time: the models are copied into a crate of their own
//! and built in release mode, in a fresh target directory, with the `ad` feature (the cotan
//! attributes, hence cotan and its dependencies) and without it (plain Rust, no
//! dependencies). Builds of the crate alone (its dependencies already built) are repeated
//! and the median taken. A third configuration compiles cotan's macros optimized, as a
//! user's manifest can ask (`[profile.release.build-override]`): cargo builds proc macros
//! unoptimized by default, and the macros' own running time is part of the crate's build.

use crate::expand::SOURCES;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const MOD_RS: &str = include_str!("models/mod.rs");

/// What a user who compiles proc macros optimized adds to their manifest (cargo builds
/// them unoptimized by default, in release builds too).
const OPTIMIZED_MACROS: &str = "\n[profile.release.build-override]\nopt-level = 3\n";

fn write_crate(dir: &Path, optimized_macros: bool) -> std::io::Result<()> {
    let cotan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cotan");
    let cotan = cotan.canonicalize()?;
    std::fs::create_dir_all(dir.join("src/models"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"cotan-bench-models\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [features]\nad = [\"dep:cotan\"]\n\n[dependencies]\ncotan = {{ path = {:?}, optional = true }}\n\n[workspace]\n{}",
            cotan.display().to_string(),
            if optimized_macros { OPTIMIZED_MACROS } else { "" }
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

/// Median time of 3 release builds of the models crate alone (its dependencies built once
/// first), in `dir`'s target directory `target`; and the time of the first, full build.
fn builds(dir: &Path, target: &Path, args: &[&str]) -> Result<(f64, f64), String> {
    let full = cargo(dir, target, args)?;
    let mut alone = vec![];
    for _ in 0..3 {
        cargo(dir, target, &["clean", "--release", "-p", "cotan-bench-models"])?;
        alone.push(cargo(dir, target, args)?);
    }
    Ok((median(alone), full))
}

/// Runs the builds and returns a markdown table.
pub fn measure() -> Result<String, String> {
    let root: PathBuf = std::env::temp_dir().join(format!("cotan-bench-compile-time-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (dir, dir_opt) = (root.join("default"), root.join("optimized-macros"));
    write_crate(&dir, false).map_err(|e| e.to_string())?;
    write_crate(&dir_opt, true).map_err(|e| e.to_string())?;
    eprintln!("compile time: clean release builds in {} (a few minutes)", root.display());
    let ad = ["build", "--release", "--features", "ad"];
    let (alone_plain, full_plain) = builds(&dir, &dir.join("target-plain"), &["build", "--release"])?;
    let (alone_ad, full_ad) = builds(&dir, &dir.join("target-ad"), &ad)?;
    let (alone_opt, full_opt) = builds(&dir_opt, &dir_opt.join("target-ad"), &ad)?;
    let _ = std::fs::remove_dir_all(&root);
    Ok(format!(
        "\n| clean release build of the models | without attributes | with attributes | ratio |\n|---|--:|--:|--:|\n\
         | the models crate alone (dependencies already built; median of 3) | {alone_plain:.2} s | {alone_ad:.2} s | {:.2} |\n\
         | the same, cotan's macros compiled optimized (`[profile.release.build-override] opt-level = 3`) | {alone_plain:.2} s | {alone_opt:.2} s | {:.2} |\n\
         | the models crate and its dependencies (cotan's macros, syn, ...) | {full_plain:.2} s | {full_ad:.1} s | {:.1} |\n\
         | the same, macros optimized | {full_plain:.2} s | {full_opt:.1} s | {:.1} |\n",
        alone_ad / alone_plain,
        alone_opt / alone_plain,
        full_ad / full_plain,
        full_opt / full_plain
    ))
}
