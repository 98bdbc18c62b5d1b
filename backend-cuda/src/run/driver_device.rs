//! A GPU through the CUDA driver (cudarc's `driver` API, loaded at run time) and cuBLAS:
//! one context (the device's primary one), one stream every copy, launch and GEMM is
//! issued on, and the program's cubin loaded with each kernel's function. cudarc panics
//! when a library is missing, so the libraries are probed first and a missing one is a
//! clear error ([`CudaError::NoDriver`], [`CudaError::NoCublas`]).
//!
//! The only code that needs a GPU; everything it is asked to do is tested on the host
//! device ([`crate::HostDevice`]) and the GEMM mapping by [`crate::run::cublas_plan`]'s
//! tests.
#![allow(unsafe_code)]

use std::ffi::{c_void, CString};
use std::sync::Mutex;

use codegen::kir::ScalarType;
use cudarc::cublas::{result as blas, sys as blas_sys};
use cudarc::driver::{result as drv, sys};
use plan::GemmShape;

use crate::error::CudaError;
use crate::run::cublas_plan::{cublas_gemm, Op};
use crate::run::device::{DevPtr, Device};

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library; no symbol is called.
    unsafe { sys::is_culib_present() }
}

/// Whether cuBLAS can be loaded on this machine.
pub fn cublas_present() -> bool {
    // SAFETY: as above.
    unsafe { blas_sys::is_culib_present() }
}

fn driver_err(e: drv::DriverError) -> CudaError {
    CudaError::Driver(format!("{e:?}"))
}

fn blas_err(e: blas::CublasError) -> CudaError {
    CudaError::Cublas(format!("{e:?}"))
}

/// The driver's handles, used under [`DriverDevice`]'s lock with the context current.
struct Handles {
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    module: sys::CUmodule,
    functions: Vec<sys::CUfunction>,
    blas: Option<blas_sys::cublasHandle_t>,
}

// SAFETY: the handles belong to the process's primary context, which any thread may
// make current; `DriverDevice` uses them only under its mutex, after making the context
// current on the calling thread.
unsafe impl Send for Handles {}

/// An NVIDIA GPU (device 0) as a [`Device`].
pub struct DriverDevice {
    handles: Mutex<Handles>,
    name: String,
}

impl DriverDevice {
    /// Opens device 0, loads `cubin` and looks up `kernels` (the program's kernel names, in
    /// order); with `gemms`, creates a cuBLAS handle on the device's stream.
    pub fn open(cubin: &[u8], kernels: &[String], gemms: bool) -> Result<DriverDevice, CudaError> {
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        if gemms && !cublas_present() {
            return Err(CudaError::NoCublas);
        }
        drv::init().map_err(driver_err)?;
        let dev = drv::device::get(0).map_err(driver_err)?;
        let name = drv::device::get_name(dev).map_err(driver_err)?;
        // SAFETY: `dev` is a valid device ordinal's handle; the retained context is kept
        // for the process's life (the primary context, shared with any other user).
        let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(driver_err)?;
        // SAFETY: `ctx` was just retained.
        unsafe { drv::ctx::set_current(ctx) }.map_err(driver_err)?;
        let stream =
            drv::stream::create(drv::stream::StreamKind::NonBlocking).map_err(driver_err)?;
        // cuModuleLoadData reads the image until its end: a cubin is an ELF image, and a
        // copy with a trailing NUL keeps a truncated one from being read past its end.
        let mut image = cubin.to_vec();
        image.push(0);
        // SAFETY: `image` is a cubin NVRTC produced for this architecture, alive during
        // the call (the driver copies it).
        let module =
            unsafe { drv::module::load_data(image.as_ptr().cast()) }.map_err(driver_err)?;
        let mut functions = Vec::with_capacity(kernels.len());
        for k in kernels {
            let cname = CString::new(k.as_str())
                .map_err(|_| CudaError::Driver(format!("kernel name `{k}` holds a NUL")))?;
            // SAFETY: `module` was loaded above and stays loaded while the device lives.
            let f = unsafe { drv::module::get_function(module, cname) }
                .map_err(|e| CudaError::Driver(format!("kernel `{k}`: {e:?}")))?;
            functions.push(f);
        }
        let blas = match gemms {
            true => {
                let h = blas::create_handle().map_err(blas_err)?;
                // SAFETY: `h` was just created, `stream` is this context's.
                unsafe { blas::set_stream(h, stream as blas_sys::cudaStream_t) }
                    .map_err(blas_err)?;
                Some(h)
            }
            false => None,
        };
        Ok(DriverDevice {
            handles: Mutex::new(Handles {
                ctx,
                stream,
                module,
                functions,
                blas,
            }),
            name,
        })
    }

    /// The handles, locked, with the context current on this thread.
    fn bound(&self) -> Result<std::sync::MutexGuard<'_, Handles>, CudaError> {
        let h = self
            .handles
            .lock()
            .map_err(|_| CudaError::Driver("device lock poisoned".into()))?;
        // SAFETY: `h.ctx` is the retained primary context, alive while the device lives.
        unsafe { drv::ctx::set_current(h.ctx) }.map_err(driver_err)?;
        Ok(h)
    }
}

/// cuBLAS's type of a stored matrix.
fn data_type(t: ScalarType) -> Result<blas_sys::cudaDataType, CudaError> {
    Ok(match t {
        ScalarType::F32 => blas_sys::cudaDataType::CUDA_R_32F,
        ScalarType::F64 => blas_sys::cudaDataType::CUDA_R_64F,
        ScalarType::BF16 => blas_sys::cudaDataType::CUDA_R_16BF,
        ScalarType::F16 => blas_sys::cudaDataType::CUDA_R_16F,
        t => {
            return Err(CudaError::UnsupportedStep(format!(
                "a GEMM of {t} on cuBLAS"
            )))
        }
    })
}

fn op(o: Op) -> blas_sys::cublasOperation_t {
    match o {
        Op::N => blas_sys::cublasOperation_t::CUBLAS_OP_N,
        Op::T => blas_sys::cublasOperation_t::CUBLAS_OP_T,
    }
}

impl Device for DriverDevice {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn alloc(&self, bytes: u64) -> Result<DevPtr, CudaError> {
        let _h = self.bound()?;
        // SAFETY: the context is current; the memory is freed by `free` (cuMemAlloc
        // aligns to at least 256 bytes).
        unsafe { drv::malloc_sync(bytes.max(1) as usize) }.map_err(driver_err)
    }

    fn free(&self, ptr: DevPtr) {
        if let Ok(h) = self.bound() {
            // SAFETY: `ptr` came from `alloc`; work using it is finished first.
            unsafe {
                let _ = drv::stream::synchronize(h.stream);
                let _ = drv::free_sync(ptr);
            }
        }
    }

    fn upload(&self, dst: DevPtr, data: &[u8]) -> Result<(), CudaError> {
        let h = self.bound()?;
        // SAFETY: `dst` addresses at least `data.len()` bytes of an allocation of this
        // context (the executor's layout); `data` outlives the copy, which completes
        // before this returns (the stream is synchronized).
        unsafe {
            drv::memcpy_htod_async(dst, data, h.stream).map_err(driver_err)?;
            drv::stream::synchronize(h.stream).map_err(driver_err)
        }
    }

    fn download(&self, src: DevPtr, out: &mut [u8]) -> Result<(), CudaError> {
        let h = self.bound()?;
        // SAFETY: as for `upload`, the other way; the stream orders it after the work
        // issued before, and is synchronized before `out` is read.
        unsafe {
            drv::memcpy_dtoh_async(out, src, h.stream).map_err(driver_err)?;
            drv::stream::synchronize(h.stream).map_err(driver_err)
        }
    }

    fn copy(&self, dst: DevPtr, src: DevPtr, bytes: u64) -> Result<(), CudaError> {
        let h = self.bound()?;
        // SAFETY: both ranges lie in allocations of this context (the executor's layout)
        // and do not overlap.
        unsafe { drv::memcpy_dtod_async(dst, src, bytes as usize, h.stream) }.map_err(driver_err)
    }

    fn launch(
        &self,
        kernel: usize,
        blocks: u32,
        threads: u32,
        args: &[DevPtr],
    ) -> Result<(), CudaError> {
        let h = self.bound()?;
        let f = *h
            .functions
            .get(kernel)
            .ok_or_else(|| CudaError::Driver(format!("no kernel {kernel}")))?;
        let mut values: Vec<DevPtr> = args.to_vec();
        let mut params: Vec<*mut c_void> = values
            .iter_mut()
            .map(|v| (v as *mut DevPtr).cast::<c_void>())
            .collect();
        // SAFETY: `f` is a kernel of the loaded module whose parameters are one pointer
        // per buffer, in `args`'s order; `params` points at those values, which the
        // driver copies at the launch; every pointer addresses an allocation of this
        // context sized from the buffer assignment.
        unsafe { drv::launch_kernel(f, (blocks, 1, 1), (threads, 1, 1), 0, h.stream, &mut params) }
            .map_err(|e| CudaError::Driver(format!("launching kernel {kernel}: {e:?}")))
    }

    fn gemm(
        &self,
        shape: &GemmShape,
        lhs: DevPtr,
        rhs: DevPtr,
        out: DevPtr,
    ) -> Result<(), CudaError> {
        let h = self.bound()?;
        let handle = h
            .blas
            .ok_or_else(|| CudaError::Cublas("no cuBLAS handle".into()))?;
        let g = cublas_gemm(shape).ok_or_else(|| {
            CudaError::UnsupportedStep(format!(
                "a GEMM whose matrices step by one element along neither dimension ({shape:?})"
            ))
        })?;
        let (a, b, at, bt) = match g.a_is_lhs {
            true => (lhs, rhs, shape.lhs_ty, shape.rhs_ty),
            false => (rhs, lhs, shape.rhs_ty, shape.lhs_ty),
        };
        let (a_type, b_type, c_type) = (data_type(at)?, data_type(bt)?, data_type(shape.out_ty)?);
        let (aw, bw, cw) = (
            at.byte_width() as i64,
            bt.byte_width() as i64,
            shape.out_ty.byte_width() as i64,
        );
        let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
        let (alpha, beta, compute): (*const c_void, *const c_void, _) = match shape.ty {
            ScalarType::F64 => (
                (&one64 as *const f64).cast(),
                (&zero64 as *const f64).cast(),
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_64F,
            ),
            _ => (
                (&one32 as *const f32).cast(),
                (&zero32 as *const f32).cast(),
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
        };
        let int = |v: i64| {
            i32::try_from(v)
                .map_err(|_| CudaError::UnsupportedStep(format!("a GEMM dimension of {v}")))
        };
        for &(oa, ob, oc) in &g.outer {
            // SAFETY: the pointers are the thunk's buffers, device allocations of this
            // context that the thunk builder checked against the shape's strides (the
            // call reads and writes exactly the shape's elements: cublas_plan's tests);
            // alpha and beta are host scalars of the compute type, alive during the call.
            unsafe {
                blas::gemm_strided_batched_ex(
                    handle,
                    op(g.transa),
                    op(g.transb),
                    int(g.m as i64)?,
                    int(g.n as i64)?,
                    int(g.k as i64)?,
                    alpha,
                    (a as i64 + oa * aw) as u64 as *const c_void,
                    a_type,
                    int(g.lda)?,
                    g.batch.1,
                    (b as i64 + ob * bw) as u64 as *const c_void,
                    b_type,
                    int(g.ldb)?,
                    g.batch.2,
                    beta,
                    (out as i64 + oc * cw) as u64 as *mut c_void,
                    c_type,
                    int(g.ldc)?,
                    g.batch.3,
                    int(g.batch.0 as i64)?,
                    compute,
                    blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(blas_err)?;
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<(), CudaError> {
        let h = self.bound()?;
        // SAFETY: the stream is this device's.
        unsafe { drv::stream::synchronize(h.stream) }.map_err(driver_err)
    }
}

impl Drop for DriverDevice {
    fn drop(&mut self) {
        let Ok(h) = self.bound() else { return };
        // SAFETY: the handles are this device's, destroyed once, after the stream's work.
        unsafe {
            let _ = drv::stream::synchronize(h.stream);
            if let Some(b) = h.blas {
                let _ = blas::destroy_handle(b);
            }
            let _ = drv::module::unload(h.module);
            let _ = drv::stream::destroy(h.stream);
        }
    }
}
