//! The GPU backend of `#[cotan::kernel(gpu)]` (cotan's feature `gpu`): a [`Device`], typed
//! [`Buffer`]s, and [`GpuError`].
//!
//! For a kernel `NAME` with `#[cotan::kernel(gpu)]`, and for each derivative `DNAME` an
//! autodiff attribute makes of it (forward or reverse mode), cotan also generates `NAME_gpu` / `DNAME_gpu`:
//! the same function as WGSL compute shaders, taking `&Device` first, then the same
//! parameters with `&[T]` as `&Buffer<T>` and `&mut [T]` as `&mut Buffer<T>` (numbers as
//! they are), and returning `Result<R, GpuError>` where `R` is what the CPU version returns.
//!
//! ```ignore
//! let dev = cotan::gpu::Device::new()?;
//! let x = Buffer::from_slice(&dev, &[1.0f32, 2.0, 3.0])?;
//! let mut y = Buffer::<f32>::zeros(&dev, 3)?;
//! let e = relax_gpu(&dev, &x, &mut y)?;
//! let y_host: Vec<f32> = y.read(&dev)?;
//! ```
//!
//! The parts of the function outside parallel loops run in order, in one GPU invocation
//! each; every parallel loop is one dispatch of `ceil(n / 64)` workgroups of 64 (its size
//! computed on the device, an indirect dispatch). The values that cross dispatches live in
//! a small state buffer. Everything is recorded into one command buffer: one submission and
//! one read-back per call. A reverse-mode derivative first makes a count run on copies of
//! the buffers, which sizes its AD stack exactly (see [`last_stack`]).

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Mutex;

/// What can go wrong on the GPU. Its `Display` is a sentence for the user.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(missing_docs)] // (The fields are what the variants' documentation names.)
pub enum GpuError {
    /// No GPU adapter (no Vulkan, Metal or DX12 device; on Linux, install Mesa's
    /// `mesa-vulkan-drivers` for the software device lavapipe).
    NoAdapter,
    /// The adapter refused a device.
    Device(String),
    /// A kernel or buffer uses `f64`, and the adapter has no `SHADER_F64`.
    F64Unsupported { what: String },
    /// A buffer would exceed a device limit: what, the bytes needed, the limit.
    TooLarge { what: String, bytes: u64, limit: u64 },
    /// A buffer given to a kernel, or written, has another length than required.
    Length { what: String, expected: usize, got: usize },
    /// A number does not fit the GPU's 32-bit indices (`usize` is `u32` on the GPU).
    IndexRange { kernel: String, name: String, value: u64 },
    /// An index out of bounds, an `assert!` that failed: what Rust would panic with.
    Failed { kernel: String, message: String },
    /// Validation mode (cotan's features `gpu` and `validate`): two iterations of a parallel
    /// loop raced on an element; the message is the CPU's panic message.
    Validation(String),
    /// The device rejected generated code or a command: a bug of cotan, to report.
    Internal { kernel: String, message: String },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoAdapter => write!(
                f,
                "no GPU adapter found (Vulkan, Metal or DX12); on Linux without a GPU, install Mesa's `mesa-vulkan-drivers` (lavapipe, a software Vulkan device)"
            ),
            GpuError::Device(e) => write!(f, "the GPU adapter refused to open a device: {e}"),
            GpuError::F64Unsupported { what } => write!(
                f,
                "{what} uses f64, and this GPU adapter has no f64 in shaders (SHADER_F64); use f32 on this device"
            ),
            GpuError::TooLarge { what, bytes, limit } => {
                write!(f, "{what} needs {bytes} bytes, more than this device's limit of {limit} bytes")
            }
            GpuError::Length { what, expected, got } => {
                write!(f, "{what} has {got} elements where {expected} are expected")
            }
            GpuError::IndexRange { kernel, name, value } => write!(
                f,
                "kernel `{kernel}`: `{name}` = {value} does not fit 32 bits, the GPU's `usize`; split the work into smaller calls"
            ),
            GpuError::Failed { kernel, message } => write!(f, "kernel `{kernel}` failed on the GPU: {message}"),
            GpuError::Validation(message) => f.write_str(message),
            GpuError::Internal { kernel, message } => write!(
                f,
                "kernel `{kernel}`: the GPU rejected cotan's generated code (a bug of cotan; please report it): {message}"
            ),
        }
    }
}

impl std::error::Error for GpuError {}

/// A GPU: wgpu's device and queue, with the pipelines of the kernels it has run.
pub struct Device {
    device: wgpu::Device,
    queue: wgpu::Queue,
    name: String,
    f64: bool,
    limits: wgpu::Limits,
    /// Compiled pipelines, by the address of their WGSL source (a `'static` string).
    pipelines: Mutex<HashMap<usize, wgpu::ComputePipeline>>,
    /// A lower limit on the AD stack's bytes than the device's, if set.
    stack_limit: Mutex<Option<u64>>,
    /// The adapter has SHADER_FLOAT32_ATOMIC, and native float atomics are in use.
    float_atomics: (bool, std::sync::atomic::AtomicBool),
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("adapter", &self.name).field("f64", &self.f64).finish()
    }
}

impl Device {
    /// The first adapter wgpu finds (high performance preferred), with `SHADER_F64` if it
    /// has it, and the adapter's own limits (storage buffers per shader, buffer sizes).
    pub fn new() -> Result<Device, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|_| GpuError::NoAdapter)?;
        let f64 = adapter.features().contains(wgpu::Features::SHADER_F64);
        let atomics = adapter.features().contains(wgpu::Features::SHADER_FLOAT32_ATOMIC);
        let features = adapter.features() & (wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_FLOAT32_ATOMIC);
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("cotan"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device(e.to_string()))?;
        Ok(Device {
            device,
            queue,
            name: adapter.get_info().name,
            f64,
            limits,
            pipelines: Mutex::new(HashMap::new()),
            stack_limit: Mutex::new(None),
            float_atomics: (atomics, std::sync::atomic::AtomicBool::new(atomics)),
        })
    }

    /// The adapter's name ("llvmpipe (LLVM ...)" for Mesa's lavapipe).
    pub fn adapter_name(&self) -> &str {
        &self.name
    }

    /// Whether kernels in `f64` run here (the adapter has `SHADER_F64`).
    pub fn supports_f64(&self) -> bool {
        self.f64
    }

    /// Whether f32 accumulations in parallel loops use the device's float atomics
    /// (`atomicAdd` on `atomic<f32>`, where the adapter has SHADER_FLOAT32_ATOMIC; the
    /// default there) rather than a compare-and-swap loop on the bits.
    pub fn float_atomics(&self) -> bool {
        self.float_atomics.0 && self.float_atomics.1.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Uses the device's float atomics (if it has them) or, with `false`, the
    /// compare-and-swap loop, which every device runs.
    pub fn use_float_atomics(&self, on: bool) {
        self.float_atomics.1.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The largest storage buffer a kernel may bind, in bytes.
    pub fn max_buffer_bytes(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// Limits a reverse-mode kernel's AD stack to `bytes` (at most the device's buffer limit,
    /// which applies without it): a call that needs more returns `GpuError::TooLarge` before it
    /// runs anything on the buffers it is given.
    pub fn set_stack_limit(&self, bytes: Option<u64>) {
        *self.stack_limit.lock().unwrap() = bytes;
    }

    fn stack_limit(&self) -> u64 {
        let dev = self.max_buffer_bytes();
        self.stack_limit.lock().unwrap().map_or(dev, |l| l.min(dev))
    }

    fn storage(&self, what: &str, bytes: u64, extra: wgpu::BufferUsages) -> Result<wgpu::Buffer, GpuError> {
        let limit = self.max_buffer_bytes();
        if bytes > limit {
            return Err(GpuError::TooLarge { what: what.to_string(), bytes, limit });
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            // At least 16 bytes: a binding may not be empty (lengths are passed apart).
            size: bytes.max(16).next_multiple_of(8),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST | extra,
            mapped_at_creation: false,
        }))
    }

    /// Copies `src` to the host.
    fn read_back(&self, src: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>, GpuError> {
        let size = bytes.max(4).next_multiple_of(4);
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cotan read-back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        self.map(&staging, bytes)
    }

    fn map(&self, staging: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>, GpuError> {
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: None })
            .map_err(|e| GpuError::Device(e.to_string()))?;
        match rx.recv() {
            Ok(Ok(())) => {}
            _ => return Err(GpuError::Device("reading a buffer back from the GPU failed".into())),
        }
        let data = {
            let view = slice.get_mapped_range().map_err(|e| GpuError::Device(e.to_string()))?;
            view[..bytes as usize].to_vec()
        };
        staging.unmap();
        Ok(data)
    }

    fn pipeline(&self, kernel: &str, wgsl: &'static str) -> Result<wgpu::ComputePipeline, GpuError> {
        let key = wgsl.as_ptr() as usize;
        if let Some(p) = self.pipelines.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        // (For cotan's developers: the shaders as the device gets them.)
        if std::env::var_os("COTAN_GPU_DUMP").is_some() {
            eprintln!("// kernel {kernel}\n{wgsl}");
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(kernel),
            source: wgpu::ShaderSource::Wgsl(wgsl.into()),
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Internal { kernel: kernel.to_string(), message: format!("{e}\n{wgsl}") });
        }
        self.pipelines.lock().unwrap().insert(key, pipeline.clone());
        Ok(pipeline)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The element types of [`Buffer`]s: `f32`, `f64` (where the device has `SHADER_F64`),
/// `i32`, `u32`.
pub trait GpuScalar: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    const BYTES: usize;
    #[doc(hidden)]
    const F64: bool = false;
    #[doc(hidden)]
    fn put(self, out: &mut Vec<u8>);
    #[doc(hidden)]
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! gpu_scalar {
    ($($t:ty = $n:literal $(, $f64:literal)?;)*) => {$(
        impl sealed::Sealed for $t {}
        impl GpuScalar for $t {
            const BYTES: usize = $n;
            $(const F64: bool = $f64;)?
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes[..$n].try_into().unwrap())
            }
        }
    )*};
}

gpu_scalar! {
    f32 = 4;
    f64 = 8, true;
    i32 = 4;
    u32 = 4;
}

/// An array on the device: what a kernel's `&[T]` / `&mut [T]` parameter is on the GPU.
pub struct Buffer<T: GpuScalar> {
    buf: wgpu::Buffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: GpuScalar> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer<{}>({} elements)", std::any::type_name::<T>(), self.len)
    }
}

impl<T: GpuScalar> Buffer<T> {
    fn new(dev: &Device, len: usize) -> Result<Self, GpuError> {
        if T::F64 && !dev.f64 {
            return Err(GpuError::F64Unsupported { what: "a buffer of f64".into() });
        }
        if u32::try_from(len).is_err() {
            return Err(GpuError::IndexRange {
                kernel: "(a buffer)".into(),
                name: "its length".into(),
                value: len as u64,
            });
        }
        let buf = dev.storage("a buffer", (len * T::BYTES) as u64, wgpu::BufferUsages::empty())?;
        Ok(Buffer { buf, len, _t: PhantomData })
    }

    /// A buffer holding `data`.
    pub fn from_slice(dev: &Device, data: &[T]) -> Result<Self, GpuError> {
        let mut b = Buffer::new(dev, data.len())?;
        b.write(dev, data)?;
        Ok(b)
    }

    /// A buffer of `len` zeros.
    pub fn zeros(dev: &Device, len: usize) -> Result<Self, GpuError> {
        // (wgpu zeroes new buffers.)
        Buffer::new(dev, len)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Overwrites the buffer with `data`, of the buffer's length.
    pub fn write(&mut self, dev: &Device, data: &[T]) -> Result<(), GpuError> {
        if data.len() != self.len {
            return Err(GpuError::Length { what: "the data written".into(), expected: self.len, got: data.len() });
        }
        let mut bytes = Vec::with_capacity(data.len() * T::BYTES);
        for &x in data {
            x.put(&mut bytes);
        }
        // (Copies are in multiples of 4 bytes.)
        while bytes.len() % 4 != 0 {
            bytes.push(0);
        }
        if !bytes.is_empty() {
            dev.queue.write_buffer(&self.buf, 0, &bytes);
        }
        Ok(())
    }

    /// The buffer's elements, copied to the host.
    pub fn read(&self, dev: &Device) -> Result<Vec<T>, GpuError> {
        let bytes = dev.read_back(&self.buf, (self.len * T::BYTES) as u64)?;
        Ok(bytes.chunks_exact(T::BYTES).map(T::get).collect())
    }
}

// ---- what generated code calls ----

/// A kernel on the GPU: its steps in order and where its numbers are in the state buffer.
#[doc(hidden)]
pub struct Plan {
    pub kernel: &'static str,
    pub f64: bool,
    /// Bytes of the state buffer.
    pub state: u32,
    pub steps: &'static [Step],
    /// The parallel loops (indirect dispatches).
    pub loops: u32,
    /// What a failure code reported by the device means (code `k + 1` is `sites[k]`).
    pub sites: &'static [&'static str],
    /// The AD stack's state fields, for a kernel that records one (reverse mode).
    pub tape: Option<TapePlan>,
    /// The vectors the kernel makes: bytes per element, offset of the length in the state.
    pub allocs: &'static [(u32, u32)],
    /// Validation mode's side tables: the buffer parameter, its name, the loop's `file:line`.
    pub checks: &'static [(u32, &'static str, &'static str)],
}

/// Offsets in the state of the AD stack's numbers (see `cotan_codegen::wgsl::TapeLayout`).
#[doc(hidden)]
pub struct TapePlan {
    pub tp: u32,
    pub tmax: u32,
    pub scap: u32,
    pub cursor: u32,
    pub ccap: u32,
    /// Per parallel loop: the offsets of its first count and of its iteration count.
    pub loops: &'static [(u32, u32)],
}

/// One dispatch: its shader (entry point `main`), the bindings it uses (0 the state, 1 the
/// status, 2 the dispatch sizes, 3 the AD stack, 4 the stack counts or offsets, `5 + k` the
/// `k`-th buffer parameter, then the vectors the kernel makes) and how it runs.
#[doc(hidden)]
pub struct Step {
    pub wgsl: &'static str,
    pub bindings: &'static [u32],
    /// The count run's shader and bindings (a kernel with an AD stack).
    pub count_wgsl: Option<&'static str>,
    pub count_bindings: &'static [u32],
    /// The shader with native f32 atomics (`atomic<f32>`), if it accumulates into f32.
    pub native_wgsl: Option<&'static str>,
    pub kind: StepKind,
}

#[doc(hidden)]
pub enum StepKind {
    /// One invocation.
    Once,
    /// The dispatch of parallel loop `k`: its size, written by the step before it.
    Loop(u32),
}

/// One call of a kernel: the state's bytes and the buffers, then [`Launch::run`].
#[doc(hidden)]
pub struct Launch<'a> {
    plan: &'static Plan,
    state: Vec<u8>,
    buffers: Vec<&'a wgpu::Buffer>,
    lens: Vec<u64>,
    /// Whether the kernel writes each buffer (the count run copies those only).
    writable: Vec<bool>,
}

impl<'a> Launch<'a> {
    pub fn new(dev: &Device, plan: &'static Plan) -> Result<Self, GpuError> {
        if plan.f64 && !dev.f64 {
            return Err(GpuError::F64Unsupported { what: format!("kernel `{}`", plan.kernel) });
        }
        Ok(Launch { plan, state: vec![0; plan.state as usize], buffers: vec![], lens: vec![], writable: vec![] })
    }

    fn at<T: GpuScalar>(&mut self, offset: u32, x: T) {
        let mut b = vec![];
        x.put(&mut b);
        self.state[offset as usize..offset as usize + b.len()].copy_from_slice(&b);
    }

    pub fn scalar<T: GpuScalar>(&mut self, offset: u32, x: T) {
        self.at(offset, x);
    }

    pub fn flag(&mut self, offset: u32, x: bool) {
        self.at(offset, u32::from(x));
    }

    /// A `usize` (or `isize`) as the GPU's 32 bits.
    pub fn index(&mut self, offset: u32, name: &str, x: i128, signed: bool) -> Result<(), GpuError> {
        let fits = if signed { i32::try_from(x).is_ok() } else { u32::try_from(x).is_ok() };
        if !fits {
            return Err(GpuError::IndexRange {
                kernel: self.plan.kernel.to_string(),
                name: name.to_string(),
                value: x as u64,
            });
        }
        self.at(offset, x as u32);
        Ok(())
    }

    /// The next buffer parameter, its length at `len_offset`, and whether the kernel
    /// writes it.
    pub fn buffer<T: GpuScalar>(&mut self, b: &'a Buffer<T>, len_offset: u32, writable: bool) {
        self.at(len_offset, b.len as u32);
        self.buffers.push(&b.buf);
        self.lens.push(b.len as u64);
        self.writable.push(writable);
    }

    /// Runs the steps and returns the state buffer's bytes after them. A kernel with an AD
    /// stack first runs a count run on copies of the buffers (the user's are not touched),
    /// which finds how many values the sequential parts and each iteration of each parallel
    /// loop push; the stack is then one buffer of exactly that size, each iteration's slice
    /// at its exclusive prefix sum. If it exceeds the limit, the error comes before anything
    /// runs on the user's buffers.
    pub fn run(self, dev: &Device) -> Result<Vec<u8>, GpuError> {
        let kernel = self.plan.kernel;
        self.run_named(dev).map_err(|e| match e {
            // (The stack's message names the kernel already.)
            GpuError::TooLarge { what, bytes, limit } if !what.contains('`') => {
                GpuError::TooLarge { what: format!("{what} (kernel `{kernel}`)"), bytes, limit }
            }
            e => e,
        })
    }

    fn run_named(self, dev: &Device) -> Result<Vec<u8>, GpuError> {
        let plan = self.plan;
        let Some(tp) = &plan.tape else {
            return self.checked(dev, &self.state, None, None, &[]);
        };
        let total_len: u64 = self.buffers.iter().map(|b| b.size() / 4).sum();
        let (mut scap, mut ccap, mut acap) = (1024 + total_len, 1024 + total_len, 16 + total_len);
        let put = |state: &mut Vec<u8>, off: u32, x: u64| {
            state[off as usize..off as usize + 4].copy_from_slice(&(x as u32).to_le_bytes())
        };
        let word = |state: &[u8], off: u32| u64::from(get::<u32>(state, off));
        for _ in 0..4 {
            // Copies of the buffers the kernel writes: the count run writes its own.
            let mut copies = vec![];
            let mut enc = dev.device.create_command_encoder(&Default::default());
            for (b, &w) in self.buffers.iter().zip(&self.writable) {
                if w {
                    let c = dev.storage("a count run's copy", b.size(), wgpu::BufferUsages::empty())?;
                    enc.copy_buffer_to_buffer(b, 0, &c, 0, b.size());
                    copies.push(Some(c));
                } else {
                    copies.push(None);
                }
            }
            dev.queue.submit([enc.finish()]);
            let tape = dev.storage("the count run's stack", 4 * scap, wgpu::BufferUsages::empty())?;
            let counts = dev.storage("the count run's counts", 4 * ccap, wgpu::BufferUsages::empty())?;
            let allocs: Vec<wgpu::Buffer> = plan
                .allocs
                .iter()
                .map(|(bytes, _)| {
                    dev.storage("a count run's vector", u64::from(*bytes) * acap, wgpu::BufferUsages::empty())
                })
                .collect::<Result<_, _>>()?;
            let mut state = self.state.clone();
            put(&mut state, tp.scap, scap);
            put(&mut state, tp.ccap, ccap);
            let copies_ref: Vec<&wgpu::Buffer> =
                copies.iter().zip(&self.buffers).map(|(c, b)| c.as_ref().unwrap_or(b)).collect();
            let after = self.execute(dev, &state, true, &copies_ref, Some(&tape), Some(&counts), &allocs, &[])?;
            let s = word(&after, tp.tmax);
            let cursor = word(&after, tp.cursor);
            let longest = plan.allocs.iter().map(|(_, off)| word(&after, *off)).max().unwrap_or(0);
            if s > scap || cursor > ccap || longest > acap {
                (scap, ccap, acap) = (scap.max(s), ccap.max(cursor), acap.max(longest));
                continue;
            }
            // Exclusive prefix sums: each iteration's slice, after the sequential stack.
            let counts = dev.read_back(&counts, 4 * cursor.max(1))?;
            let mut offsets = vec![0u32; cursor as usize + 1];
            let (mut words, mut deepest) = (s, 0);
            for &(cb, cn) in tp.loops {
                let (base, n) = (word(&after, cb) as usize, word(&after, cn) as usize);
                if base + n >= offsets.len() {
                    continue;
                }
                let mut at = s;
                for t in 0..n {
                    offsets[base + t] = at as u32;
                    let c = u64::from(u32::get(&counts[4 * (base + t)..]));
                    deepest = deepest.max(c);
                    at += c;
                }
                offsets[base + n] = at as u32;
                words = words.max(at);
            }
            let bytes = 4 * words;
            let limit = dev.stack_limit();
            if bytes > limit || u32::try_from(words).is_err() {
                return Err(GpuError::TooLarge {
                    what: format!("the AD stack of kernel `{}`", plan.kernel),
                    bytes,
                    limit,
                });
            }
            let tape = dev.storage("the AD stack", bytes, wgpu::BufferUsages::empty())?;
            let mut obytes = vec![];
            for o in &offsets {
                o.put(&mut obytes);
            }
            let offs = dev.storage("the AD stack's offsets", obytes.len() as u64, wgpu::BufferUsages::empty())?;
            dev.queue.write_buffer(&offs, 0, &obytes);
            let allocs: Vec<wgpu::Buffer> = plan
                .allocs
                .iter()
                .map(|(b, off)| {
                    dev.storage(
                        "a vector the kernel makes",
                        u64::from(*b) * word(&after, *off),
                        wgpu::BufferUsages::empty(),
                    )
                })
                .collect::<Result<_, _>>()?;
            let mut state = self.state.clone();
            put(&mut state, tp.scap, s);
            let iterations: u64 = tp.loops.iter().map(|&(_, cn)| word(&after, cn)).sum();
            LAST_STACK.with(|c| {
                c.set(StackStats { bytes, sequential_bytes: 4 * s, iterations, deepest_iteration_bytes: 4 * deepest })
            });
            return self.checked(dev, &state, Some(&tape), Some(&offs), &allocs);
        }
        Err(GpuError::Internal { kernel: plan.kernel.to_string(), message: "the count run did not settle".into() })
    }

    /// The real run on the user's buffers, and in validation mode the check of its side
    /// tables.
    fn checked(
        &self,
        dev: &Device,
        state: &[u8],
        tape: Option<&wgpu::Buffer>,
        offsets: Option<&wgpu::Buffer>,
        allocs: &[wgpu::Buffer],
    ) -> Result<Vec<u8>, GpuError> {
        let tables: Vec<wgpu::Buffer> = self
            .plan
            .checks
            .iter()
            .map(|&(b, _, _)| {
                dev.storage("a validation table", 24 * self.lens[b as usize], wgpu::BufferUsages::empty())
            })
            .collect::<Result<_, _>>()?;
        let after = self.execute(dev, state, false, &self.buffers, tape, offsets, allocs, &tables)?;
        for (&(b, name, site), table) in self.plan.checks.iter().zip(&tables) {
            let len = self.lens[b as usize];
            let words = dev.read_back(table, 24 * len)?;
            let w = |e: u64, k: usize| u32::get(&words[4 * (6 * e as usize + k)..]);
            for e in 0..len {
                // Per access kind: the smallest and largest iteration, if any.
                let span = |kind: usize| {
                    let hi = w(e, 2 * kind);
                    (hi != 0).then(|| (u32::MAX - w(e, 2 * kind + 1), hi - 1))
                };
                if let Some(pair) = race(span(0), span(1), span(2)) {
                    return Err(GpuError::Validation(validation_message(self.plan.kernel, site, name, e, pair)));
                }
            }
        }
        Ok(after)
    }

    /// One run of the steps (the count run's texts with `count`) on these buffers.
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &self,
        dev: &Device,
        state_bytes: &[u8],
        count: bool,
        buffers: &[&wgpu::Buffer],
        tape: Option<&wgpu::Buffer>,
        counts: Option<&wgpu::Buffer>,
        allocs: &[wgpu::Buffer],
        tables: &[wgpu::Buffer],
    ) -> Result<Vec<u8>, GpuError> {
        let plan = self.plan;
        let kernel = plan.kernel;
        let state = dev.storage("the kernel's state", u64::from(plan.state), wgpu::BufferUsages::empty())?;
        dev.queue.write_buffer(&state, 0, state_bytes);
        let status = dev.storage("the kernel's status", 16, wgpu::BufferUsages::empty())?;
        let sizes = dev.storage(
            "the kernel's dispatch sizes",
            12 * u64::from(plan.loops.max(1)),
            wgpu::BufferUsages::INDIRECT,
        )?;
        let mut pipelines = vec![];
        for step in plan.steps {
            let wgsl = match (count, step.native_wgsl) {
                (true, _) => step.count_wgsl.unwrap_or(step.wgsl),
                (false, Some(native)) if dev.float_atomics() => native,
                (false, _) => step.wgsl,
            };
            pipelines.push(dev.pipeline(kernel, wgsl)?);
        }
        let scope = dev.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut enc = dev.device.create_command_encoder(&Default::default());
        for (step, pipeline) in plan.steps.iter().zip(&pipelines) {
            let bindings = if count && step.count_wgsl.is_some() { step.count_bindings } else { step.bindings };
            let entries: Vec<wgpu::BindGroupEntry> = bindings
                .iter()
                .map(|&b| {
                    let buf = match b {
                        0 => &state,
                        1 => &status,
                        2 => &sizes,
                        3 => tape.expect("a kernel with an AD stack"),
                        4 => counts.expect("a kernel with an AD stack"),
                        k if (k as usize - 5) < buffers.len() => buffers[k as usize - 5],
                        k if (k as usize - 5 - buffers.len()) < allocs.len() => &allocs[k as usize - 5 - buffers.len()],
                        k => &tables[k as usize - 5 - buffers.len() - allocs.len()],
                    };
                    wgpu::BindGroupEntry { binding: b, resource: buf.as_entire_binding() }
                })
                .collect();
            let group = dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(kernel),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &group, &[]);
            match step.kind {
                StepKind::Once => pass.dispatch_workgroups(1, 1, 1),
                StepKind::Loop(k) => pass.dispatch_workgroups_indirect(&sizes, 12 * u64::from(k)),
            }
        }
        dev.queue.submit([enc.finish()]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Internal { kernel: kernel.to_string(), message: e.to_string() });
        }
        // (The count run's failures are the real run's to report: its pops are zeros.)
        if !count {
            let st = dev.read_back(&status, 16)?;
            let code = u32::get(&st[0..4]);
            if code != 0 {
                let (a, b) = (u32::get(&st[4..8]), u32::get(&st[8..12]));
                let site = plan.sites.get(code as usize - 1).copied().unwrap_or("(unknown)");
                let message = site.replace("{0}", &a.to_string()).replace("{1}", &b.to_string());
                return Err(GpuError::Failed { kernel: kernel.to_string(), message });
            }
        }
        dev.read_back(&state, u64::from(plan.state))
    }
}

/// The kinds of access, in the CPU's order (`rt::par`'s `Access`).
const WRITE: u8 = 0;
const READ: u8 = 1;
const ACCUMULATE: u8 = 2;

/// Two accesses of different iterations to one element that race, from the smallest and
/// largest iteration that wrote, read and accumulated into it: a write with any other
/// access, or an accumulation with a read.
#[allow(clippy::type_complexity)]
fn race(w: Option<(u32, u32)>, r: Option<(u32, u32)>, a: Option<(u32, u32)>) -> Option<((u8, u32), (u8, u32))> {
    let other = |(lo, hi): (u32, u32), me: u32| [lo, hi].into_iter().find(|&x| x != me);
    if let Some((lo, hi)) = w {
        if lo != hi {
            return Some(((WRITE, lo), (WRITE, hi)));
        }
        for (kind, s) in [(READ, r), (ACCUMULATE, a)] {
            if let Some(x) = s.and_then(|s| other(s, lo)) {
                return Some(((WRITE, lo), (kind, x)));
            }
        }
    }
    if let (Some(a), Some(r)) = (a, r) {
        for x in [a.0, a.1] {
            if let Some(y) = other(r, x) {
                return Some(((READ, y), (ACCUMULATE, x)));
            }
        }
    }
    None
}

/// The CPU's message (`rt::par`'s `CheckedSlice`), with the same order of the two accesses.
fn validation_message(kernel: &str, site: &str, name: &str, i: u64, (a, b): ((u8, u32), (u8, u32))) -> String {
    let verb = |k: u8| match k {
        WRITE => "written",
        READ => "read",
        _ => "accumulated into (`+=`/`-=`)",
    };
    let ((a, ia), (b, ib)) = if b < a { (b, a) } else { (a, b) };
    let what = if a == b {
        format!("is {} by iteration {ia} and by iteration {ib}", verb(a))
    } else {
        format!("is {} by iteration {ia} and {} by iteration {ib}", verb(a), verb(b))
    };
    format!(
        "cotan validation: kernel `{kernel}`, parallel loop at {site}: `{name}[{i}]` {what}; \
         the iterations of a parallel loop run at once, so an element one of them writes is \
         read or written by no other, and one they accumulate into is read by none"
    )
}

/// The AD stack of a reverse-mode GPU call, as the count run sized it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    /// The whole stack: the sequential parts' and, after it, the largest parallel loop's
    /// iterations' slices.
    pub bytes: u64,
    /// The sequential parts' stack (the snapshots of what parallel loops write, ...).
    pub sequential_bytes: u64,
    /// The iterations of the parallel loops that record (each has its own slice).
    pub iterations: u64,
    /// The largest slice of one iteration: what a fixed per-thread cap would have to be.
    pub deepest_iteration_bytes: u64,
}

thread_local! {
    static LAST_STACK: std::cell::Cell<StackStats> = const {
        std::cell::Cell::new(StackStats { bytes: 0, sequential_bytes: 0, iterations: 0, deepest_iteration_bytes: 0 })
    };
}

/// The AD stack of the last reverse-mode GPU call on this thread (zeros before any).
pub fn last_stack() -> StackStats {
    LAST_STACK.with(|c| c.get())
}

/// A number of the state buffer read back.
#[doc(hidden)]
pub fn get<T: GpuScalar>(state: &[u8], offset: u32) -> T {
    T::get(&state[offset as usize..])
}

#[doc(hidden)]
pub fn get_flag(state: &[u8], offset: u32) -> bool {
    u32::get(&state[offset as usize..]) != 0
}
