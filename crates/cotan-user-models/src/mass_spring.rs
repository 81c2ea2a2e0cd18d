//! A DiffTaichi-style mass-spring system: point masses joined by springs, falling
//! under gravity onto a penalty ground, with quadratic air drag, integrated by
//! semi-implicit (symplectic) Euler. The loss is the distance of the centre of mass to
//! a target after a fixed number of steps.

use cotan::{autodiff_forward, autodiff_reverse};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub mass: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spring {
    pub a: usize,
    pub b: usize,
    pub rest: f64,
    pub k: f64,
}

impl Spring {
    /// A spring between particles `a` and `b`, at rest at their current distance.
    pub fn between(particles: &[Particle], a: usize, b: usize, k: f64) -> Self {
        let rest = norm(sub(particles[b].pos, particles[a].pos));
        Spring { a, b, rest, k }
    }
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub dt: f64,
    pub steps: usize,
    pub gravity: [f64; 2],
    /// Quadratic drag coefficient: force -drag |v| v.
    pub drag: f64,
    /// Height of the ground and stiffness of its penalty force.
    pub ground: f64,
    pub ground_k: f64,
    pub target: [f64; 2],
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            dt: 0.01,
            steps: 100,
            gravity: [0.0, -9.81],
            drag: 0.05,
            ground: 0.0,
            ground_k: 1000.0,
            target: [2.0, 0.5],
        }
    }
}

fn sub(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] - b[0], a[1] - b[1]]
}

fn norm(v: [f64; 2]) -> f64 {
    (v[0] * v[0] + v[1] * v[1]).sqrt()
}

/// A square of four particles with its four sides and two diagonals as springs.
pub fn square_body(origin: [f64; 2], side: f64, k: f64) -> (Vec<Particle>, Vec<Spring>) {
    let corners = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
    let particles: Vec<Particle> = corners
        .iter()
        .enumerate()
        .map(|(i, c)| Particle {
            pos: [origin[0] + side * c[0], origin[1] + side * c[1]],
            vel: [1.0, 0.0],
            mass: 1.0 + 0.25 * i as f64,
        })
        .collect();
    let pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)];
    let springs = pairs
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| Spring::between(&particles, a, b, k * (1.0 + 0.1 * i as f64)))
        .collect();
    (particles, springs)
}

fn accelerations(particles: &[Particle], springs: &[Spring], cfg: &SimConfig) -> Vec<[f64; 2]> {
    let mut force: Vec<[f64; 2]> =
        particles.iter().map(|p| [p.mass * cfg.gravity[0], p.mass * cfg.gravity[1]]).collect();

    for s in springs {
        let d = sub(particles[s.b].pos, particles[s.a].pos);
        let len = norm(d).max(f64::EPSILON);
        let f = s.k * (len - s.rest) / len;
        for c in 0..2 {
            force[s.a][c] += f * d[c];
            force[s.b][c] -= f * d[c];
        }
    }

    for (p, f) in particles.iter().zip(force.iter_mut()) {
        let speed = norm(p.vel);
        for c in 0..2 {
            f[c] -= cfg.drag * speed * p.vel[c];
        }
        let depth = cfg.ground - p.pos[1];
        if depth > 0.0 {
            f[1] += cfg.ground_k * depth;
        }
    }

    particles.iter().zip(force).map(|(p, f)| [f[0] / p.mass, f[1] / p.mass]).collect()
}

/// One semi-implicit Euler step.
pub fn step(particles: &mut [Particle], springs: &[Spring], cfg: &SimConfig) {
    let acc = accelerations(particles, springs, cfg);
    for (p, a) in particles.iter_mut().zip(&acc) {
        for c in 0..2 {
            p.vel[c] += cfg.dt * a[c];
            p.pos[c] += cfg.dt * p.vel[c];
        }
    }
}

pub fn center_of_mass(particles: &[Particle]) -> [f64; 2] {
    let total_mass: f64 = particles.iter().map(|p| p.mass).sum();
    let weighted = particles.iter().fold([0.0, 0.0], |acc, p| [acc[0] + p.mass * p.pos[0], acc[1] + p.mass * p.pos[1]]);
    [weighted[0] / total_mass, weighted[1] / total_mass]
}

fn distance_to_target(particles: &[Particle], cfg: &SimConfig) -> f64 {
    norm(sub(center_of_mass(particles), cfg.target))
}

/// Loss as a function of the springs (std's way for a slice of structs: the shadow
/// `&mut [Spring]` receives d loss / d k and d loss / d rest).
#[autodiff_reverse(loss_wrt_springs_grad, Duplicated, Const, Const, Active)]
#[autodiff_forward(loss_wrt_springs_tangent, Dual, Const, Const, Dual)]
pub fn loss_wrt_springs(springs: &[Spring], initial: &[Particle], cfg: &SimConfig) -> f64 {
    let mut particles = initial.to_vec();
    for _ in 0..cfg.steps {
        step(&mut particles, springs, cfg);
    }
    distance_to_target(&particles, cfg)
}

/// Loss as a function of the spring stiffnesses alone, as a flat slice.
#[autodiff_reverse(loss_wrt_stiffness_grad, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(loss_wrt_stiffness_tangent, Dual, Const, Const, Const, Dual)]
pub fn loss_wrt_stiffness(stiffness: &[f64], springs: &[Spring], initial: &[Particle], cfg: &SimConfig) -> f64 {
    let springs: Vec<Spring> = springs.iter().zip(stiffness).map(|(s, &k)| Spring { k, ..*s }).collect();
    let mut particles = initial.to_vec();
    for _ in 0..cfg.steps {
        step(&mut particles, &springs, cfg);
    }
    distance_to_target(&particles, cfg)
}

/// Loss as a function of the particles' initial velocities.
#[autodiff_reverse(loss_wrt_initial_velocity_grad, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(loss_wrt_initial_velocity_tangent, Dual, Const, Const, Const, Dual)]
pub fn loss_wrt_initial_velocity(
    velocities: &[[f64; 2]],
    initial: &[Particle],
    springs: &[Spring],
    cfg: &SimConfig,
) -> f64 {
    let mut particles: Vec<Particle> = initial.iter().zip(velocities).map(|(p, &vel)| Particle { vel, ..*p }).collect();
    for _ in 0..cfg.steps {
        step(&mut particles, springs, cfg);
    }
    distance_to_target(&particles, cfg)
}

/// Number of particles and springs of the fixed-size scene (DiffTaichi sizes its
/// fields at compile time; so does this version).
pub const NP: usize = 4;
pub const NS: usize = 6;

/// A compile-time-sized body: spring end points, rest lengths, particle masses.
#[derive(Clone, Debug)]
pub struct Scene {
    pub ends: [(usize, usize); NS],
    pub rest: [f64; NS],
    pub mass: [f64; NP],
}

impl Scene {
    /// The same body as `square_body`, in fixed-size arrays.
    pub fn from_body(particles: &[Particle], springs: &[Spring]) -> (Self, [[f64; 2]; NP], [[f64; 2]; NP], [f64; NS]) {
        let mut scene = Scene { ends: [(0, 0); NS], rest: [0.0; NS], mass: [0.0; NP] };
        let mut x0 = [[0.0; 2]; NP];
        let mut v0 = [[0.0; 2]; NP];
        let mut k = [0.0; NS];
        for (i, p) in particles.iter().enumerate() {
            x0[i] = p.pos;
            v0[i] = p.vel;
            scene.mass[i] = p.mass;
        }
        for (s, spring) in springs.iter().enumerate() {
            scene.ends[s] = (spring.a, spring.b);
            scene.rest[s] = spring.rest;
            k[s] = spring.k;
        }
        (scene, x0, v0, k)
    }
}

/// The mass-spring loss with fixed-size arrays, as a function of the stiffnesses and
/// the initial velocities.
#[autodiff_reverse(fixed_size_loss_grad, Duplicated, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(fixed_size_loss_tangent, Dual, Dual, Const, Const, Const, Dual)]
pub fn fixed_size_loss(
    stiffness: &[f64; NS],
    v0: &[[f64; 2]; NP],
    x0: &[[f64; 2]; NP],
    scene: &Scene,
    cfg: &SimConfig,
) -> f64 {
    let mut x = *x0;
    let mut v = *v0;
    for _ in 0..cfg.steps {
        let mut f = [[0.0; 2]; NP];
        for i in 0..NP {
            for c in 0..2 {
                f[i][c] = scene.mass[i] * cfg.gravity[c];
            }
        }
        for (s, &(a, b)) in scene.ends.iter().enumerate() {
            let d = [x[b][0] - x[a][0], x[b][1] - x[a][1]];
            let len = d[0].hypot(d[1]).max(f64::EPSILON);
            let mag = stiffness[s] * (len - scene.rest[s]) / len;
            for c in 0..2 {
                f[a][c] += mag * d[c];
                f[b][c] -= mag * d[c];
            }
        }
        for i in 0..NP {
            let speed = v[i][0].hypot(v[i][1]);
            for c in 0..2 {
                f[i][c] -= cfg.drag * speed * v[i][c];
            }
            if x[i][1] < cfg.ground {
                f[i][1] += cfg.ground_k * (cfg.ground - x[i][1]);
            }
            for c in 0..2 {
                v[i][c] += cfg.dt * f[i][c] / scene.mass[i];
                x[i][c] += cfg.dt * v[i][c];
            }
        }
    }
    let total: f64 = scene.mass.iter().sum();
    let mut com = [0.0; 2];
    for i in 0..NP {
        for c in 0..2 {
            com[c] += scene.mass[i] * x[i][c] / total;
        }
    }
    ((com[0] - cfg.target[0]).powi(2) + (com[1] - cfg.target[1]).powi(2)).sqrt()
}
