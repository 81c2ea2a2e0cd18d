//! Fitting ODE parameters: classical fourth-order Runge–Kutta, the loss being the
//! squared error of the final state.

use cotan::{autodiff_forward, autodiff_reverse};

/// One RK4 step of y' = f(t, y) in place; `f(t, y, dy)` writes the derivative into `dy`.
pub fn rk4_step<F: Fn(f64, &[f64], &mut [f64])>(f: &F, t: f64, y: &mut [f64], h: f64) {
    let n = y.len();
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];

    f(t, y, &mut k1);
    let y2: Vec<f64> = y.iter().zip(&k1).map(|(yi, k)| yi + 0.5 * h * k).collect();
    f(t + 0.5 * h, &y2, &mut k2);
    let y3: Vec<f64> = y.iter().zip(&k2).map(|(yi, k)| yi + 0.5 * h * k).collect();
    f(t + 0.5 * h, &y3, &mut k3);
    let y4: Vec<f64> = y.iter().zip(&k3).map(|(yi, k)| yi + h * k).collect();
    f(t + h, &y4, &mut k4);

    for i in 0..n {
        y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
}

/// Lotka–Volterra predator–prey model, parameters `[alpha, beta, delta, gamma]`:
/// x' = alpha x - beta x y,  y' = delta x y - gamma y.
/// Integrates from `y0` over [0, t_end] in `steps` RK4 steps and returns the squared
/// distance of the final state to `target`.
#[autodiff_reverse(lotka_volterra_loss_grad, Duplicated, Const, Const, Const, Const, Active)]
#[autodiff_forward(lotka_volterra_loss_tangent, Dual, Const, Const, Const, Const, Dual)]
pub fn lotka_volterra_loss(params: &[f64], y0: &[f64], target: &[f64], t_end: f64, steps: usize) -> f64 {
    let (alpha, beta, delta, gamma) = (params[0], params[1], params[2], params[3]);
    let rhs = |_t: f64, y: &[f64], dy: &mut [f64]| {
        dy[0] = alpha * y[0] - beta * y[0] * y[1];
        dy[1] = delta * y[0] * y[1] - gamma * y[1];
    };

    let h = t_end / steps as f64;
    let mut y = y0.to_vec();
    for i in 0..steps {
        rk4_step(&rhs, i as f64 * h, &mut y, h);
    }
    y.iter().zip(target).map(|(a, b)| (a - b).powi(2)).sum()
}

/// Lotka–Volterra loss as a function of the initial state too (both slices active).
#[autodiff_reverse(lotka_volterra_ic_loss_grad, Duplicated, Duplicated, Const, Const, Active)]
#[autodiff_forward(lotka_volterra_ic_loss_tangent, Dual, Dual, Const, Const, Dual)]
pub fn lotka_volterra_ic_loss(params: &[f64], y0: &[f64], target: &[f64], steps: usize) -> f64 {
    lotka_volterra_loss(params, y0, target, 10.0, steps)
}

const PENDULUM_STEPS: usize = 200;
const PENDULUM_DT: f64 = 0.02;

type State = [f64; 2];

fn axpy(a: f64, x: State, y: State) -> State {
    [y[0] + a * x[0], y[1] + a * x[1]]
}

/// One RK4 step for an autonomous 2-d system with the state as an array by value.
pub fn rk4<F>(f: F, y: State, h: f64) -> State
where
    F: Fn(State) -> State,
{
    let k1 = f(y);
    let k2 = f(axpy(h / 2.0, k1, y));
    let k3 = f(axpy(h / 2.0, k2, y));
    let k4 = f(axpy(h, k3, y));
    [
        y[0] + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]),
        y[1] + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]),
    ]
}

/// Damped pendulum: theta'' = -(g/l) sin theta - c theta'.
pub fn pendulum_rhs(state: State, g_over_l: f64, damping: f64) -> State {
    let [theta, omega] = state;
    [omega, -g_over_l * theta.sin() - damping * omega]
}

/// Squared error of the pendulum's state after 4 s, released at rest from `theta0`,
/// as a function of g/l, the damping and the release angle.
#[autodiff_reverse(pendulum_loss_grad, Active, Active, Active, Const, Active)]
#[autodiff_forward(pendulum_loss_tangent, Dual, Dual, Dual, Const, Dual)]
pub fn pendulum_loss(g_over_l: f64, damping: f64, theta0: f64, target: [f64; 2]) -> f64 {
    let mut state = [theta0, 0.0];
    for _ in 0..PENDULUM_STEPS {
        state = rk4(|s| pendulum_rhs(s, g_over_l, damping), state, PENDULUM_DT);
    }
    let [theta, omega] = state;
    (theta - target[0]).powi(2) + (omega - target[1]).powi(2)
}
