//! Optimises a DiffTaichi-style mass-spring body through its time loop: four particles
//! joined by six springs fall under gravity with drag for 100 steps of semi-implicit
//! Euler; the rest lengths of the springs are tuned so that the body ends in a target shape
//! (the diagonal from its first corner to its third a given vector). The gradient of the
//! final distance with respect to the springs (a `&[Spring]`
//! with a shadow `&mut [Spring]`, as in std::autodiff) comes from cotan's reverse mode
//! through the whole simulation, and is checked once against finite differences.
//!
//! Run: `cargo run --release -p cotan-examples --example mass_spring`

// Index loops, as simulation code writes them.
#![allow(clippy::needless_range_loop)]

use cotan::autodiff_reverse;

#[derive(Clone, Copy, Debug, Default)]
pub struct Particle {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub mass: f64,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Spring {
    pub a: usize,
    pub b: usize,
    pub rest: f64,
    pub k: f64,
}

const STEPS: usize = 100;
const DT: f64 = 0.01;

fn sub(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] - b[0], a[1] - b[1]]
}

fn norm(v: [f64; 2]) -> f64 {
    (v[0] * v[0] + v[1] * v[1]).sqrt()
}

fn step(particles: &mut [Particle], springs: &[Spring]) {
    for s in springs {
        let d = sub(particles[s.b].pos, particles[s.a].pos);
        let len = norm(d);
        let f = s.k * (len - s.rest) / len;
        for c in 0..2 {
            particles[s.a].vel[c] += DT * f * d[c] / particles[s.a].mass;
            particles[s.b].vel[c] -= DT * f * d[c] / particles[s.b].mass;
        }
    }
    for p in particles.iter_mut() {
        let speed = norm(p.vel);
        p.vel[1] -= DT * 9.81;
        for c in 0..2 {
            p.vel[c] -= DT * 0.05 * speed * p.vel[c];
            p.pos[c] += DT * p.vel[c];
        }
    }
}

/// Distance of the body's diagonal (third corner minus first) to `target` after the
/// simulation, plus a little of the spread of its mass around its centre.
#[autodiff_reverse(loss_grad, Duplicated, Const, Const, Active)]
fn loss(springs: &[Spring], initial: &[Particle], target: &[f64; 2]) -> f64 {
    let mut particles = initial.to_vec();
    for _ in 0..STEPS {
        step(&mut particles, springs);
    }
    let total: f64 = particles.iter().map(|p| p.mass).sum();
    let com = particles.iter().fold([0.0, 0.0], |acc, p| [acc[0] + p.mass * p.pos[0], acc[1] + p.mass * p.pos[1]]);
    let centre = [com[0] / total, com[1] / total];
    let spread: f64 = particles.iter().map(|p| p.mass * norm(sub(p.pos, centre)).powi(2)).sum::<f64>() / total;
    norm(sub(sub(particles[2].pos, particles[0].pos), *target)) + 0.01 * spread
}

fn body() -> (Vec<Spring>, Vec<Particle>) {
    let corners = [[0.0, 1.0], [1.0, 1.0], [1.0, 2.0], [0.0, 2.0]];
    let particles: Vec<Particle> = corners
        .iter()
        .enumerate()
        .map(|(i, &pos)| Particle { pos, vel: [1.0, 0.0], mass: 1.0 + 0.25 * i as f64 })
        .collect();
    let pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)];
    let springs = pairs
        .iter()
        .map(|&(a, b)| Spring { a, b, rest: norm(sub(particles[b].pos, particles[a].pos)), k: 200.0 })
        .collect();
    (springs, particles)
}

/// Runs `iterations` of gradient descent on the rest lengths; the loss before and after.
fn optimise(iterations: usize) -> (f64, f64) {
    let (mut springs, particles) = body();
    let target = [1.6, 0.6];

    let mut grad = vec![Spring::default(); springs.len()];
    let start = loss_grad(&springs, &mut grad, &particles, &target, 1.0);
    for s in 0..springs.len() {
        let h = 1e-6;
        let (mut hi, mut lo) = (springs.clone(), springs.clone());
        hi[s].rest += h;
        lo[s].rest -= h;
        let fd = (loss(&hi, &particles, &target) - loss(&lo, &particles, &target)) / (2.0 * h);
        assert!((grad[s].rest - fd).abs() <= 1e-5 * fd.abs().max(1.0), "spring {s}: {} vs {fd}", grad[s].rest);
    }

    let mut value = start;
    for it in 0..iterations {
        let mut grad = vec![Spring::default(); springs.len()];
        value = loss_grad(&springs, &mut grad, &particles, &target, 1.0);
        for (s, g) in springs.iter_mut().zip(&grad) {
            s.rest = (s.rest - 0.02 * g.rest).max(0.1);
        }
        if it % 20 == 0 {
            println!("iteration {it:3}: distance to the target {value:.4}");
        }
    }
    (start, value)
}

fn main() {
    let (start, end) = optimise(100);
    println!("distance {start:.4} -> {end:.4}");
    assert!(end < 0.5 * start);
}

#[test]
fn optimising_the_springs_brings_the_body_to_the_target() {
    let (start, end) = optimise(40);
    assert!(end < 0.7 * start, "distance {start} -> {end}");
}
