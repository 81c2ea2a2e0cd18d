//! The GPU backend of `#[cotan::kernel(gpu)]` (cotan's feature `gpu`): a [`Device`], typed
//! [`Buffer`]s, and [`GpuError`].
//!
//! For a kernel `NAME` with `#[cotan::kernel(gpu)]`, and for each forward-mode derivative
//! `DNAME` an autodiff attribute makes of it, cotan also generates `NAME_gpu` / `DNAME_gpu`:
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
//! one read-back per call.

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
    /// The kernel uses `f64`, and the adapter has no `SHADER_F64`.
    F64Unsupported { kernel: String },
    /// A buffer would exceed a device limit: what, the bytes needed, the limit.
    TooLarge { what: String, bytes: u64, limit: u64 },
    /// A buffer given to a kernel, or written, has another length than required.
    Length { what: String, expected: usize, got: usize },
    /// A number does not fit the GPU's 32-bit indices (`usize` is `u32` on the GPU).
    IndexRange { kernel: String, name: String, value: u64 },
    /// An index out of bounds, an `assert!` that failed: what Rust would panic with.
    Failed { kernel: String, message: String },
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
            GpuError::F64Unsupported { kernel } => write!(
                f,
                "kernel `{kernel}` uses f64, and this GPU adapter has no f64 in shaders (SHADER_F64); write the kernel in f32 for this device"
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
        let features = if f64 { wgpu::Features::SHADER_F64 } else { wgpu::Features::empty() };
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("cotan"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device(e.to_string()))?;
        Ok(Device { device, queue, name: adapter.get_info().name, f64, limits, pipelines: Mutex::new(HashMap::new()) })
    }

    /// The adapter's name ("llvmpipe (LLVM ...)" for Mesa's lavapipe).
    pub fn adapter_name(&self) -> &str {
        &self.name
    }

    /// Whether kernels in `f64` run here (the adapter has `SHADER_F64`).
    pub fn supports_f64(&self) -> bool {
        self.f64
    }

    /// The largest storage buffer a kernel may bind, in bytes.
    pub fn max_buffer_bytes(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
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
            return Err(GpuError::F64Unsupported { kernel: "(a buffer of f64)".into() });
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
}

/// One dispatch: its shader (entry point `main`), the bindings it uses (0 the state, 1 the
/// status, 2 the dispatch sizes, `3 + k` the `k`-th buffer parameter) and how it runs.
#[doc(hidden)]
pub struct Step {
    pub wgsl: &'static str,
    pub bindings: &'static [u32],
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
}

impl<'a> Launch<'a> {
    pub fn new(dev: &Device, plan: &'static Plan) -> Result<Self, GpuError> {
        if plan.f64 && !dev.f64 {
            return Err(GpuError::F64Unsupported { kernel: plan.kernel.to_string() });
        }
        Ok(Launch { plan, state: vec![0; plan.state as usize], buffers: vec![] })
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

    /// The next buffer parameter, its length at `len_offset`.
    pub fn buffer<T: GpuScalar>(&mut self, b: &'a Buffer<T>, len_offset: u32) {
        self.at(len_offset, b.len as u32);
        self.buffers.push(&b.buf);
    }

    /// Runs the steps and returns the state buffer's bytes after them.
    pub fn run(self, dev: &Device) -> Result<Vec<u8>, GpuError> {
        let plan = self.plan;
        let kernel = plan.kernel;
        let state = dev.storage("the kernel's state", u64::from(plan.state), wgpu::BufferUsages::empty())?;
        dev.queue.write_buffer(&state, 0, &self.state);
        let status = dev.storage("the kernel's status", 16, wgpu::BufferUsages::empty())?;
        let sizes = dev.storage(
            "the kernel's dispatch sizes",
            12 * u64::from(plan.loops.max(1)),
            wgpu::BufferUsages::INDIRECT,
        )?;
        let mut pipelines = vec![];
        for step in plan.steps {
            pipelines.push(dev.pipeline(kernel, step.wgsl)?);
        }
        let scope = dev.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut enc = dev.device.create_command_encoder(&Default::default());
        for (step, pipeline) in plan.steps.iter().zip(&pipelines) {
            let entries: Vec<wgpu::BindGroupEntry> = step
                .bindings
                .iter()
                .map(|&b| {
                    let buf = match b {
                        0 => &state,
                        1 => &status,
                        2 => &sizes,
                        k => self.buffers[k as usize - 3],
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
        let st = dev.read_back(&status, 16)?;
        let code = u32::get(&st[0..4]);
        if code != 0 {
            let (a, b) = (u32::get(&st[4..8]), u32::get(&st[8..12]));
            let site = plan.sites.get(code as usize - 1).copied().unwrap_or("(unknown)");
            let message = site.replace("{0}", &a.to_string()).replace("{1}", &b.to_string());
            return Err(GpuError::Failed { kernel: kernel.to_string(), message });
        }
        dev.read_back(&state, u64::from(plan.state))
    }
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
