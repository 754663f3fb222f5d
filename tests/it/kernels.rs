//! seamcut's CUDA kernels (`kernels/`): every source compiles to PTX with NVRTC (no GPU needed:
//! NVRTC from PyPI, `scripts/fetch-nvrtc.sh`), and, where a GPU and a `cuda` build exist, each
//! kernel agrees with its CPU reference.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;

use seamcut::kernels::{ENTRY_POINTS, NVRTC_OPTIONS, SOURCES};

/// The NVRTC library: `$SEAMCUT_NVRTC` (then it must work), else the copy
/// scripts/fetch-nvrtc.sh leaves in the target dir, else the cuda build's (scripts/build-cuda.sh).
fn nvrtc_path() -> Option<(PathBuf, bool)> {
    if let Some(p) = std::env::var_os("SEAMCUT_NVRTC") {
        return Some((PathBuf::from(p), true));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"), PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    [
        target.join("nvrtc/libnvrtc.so.13"),
        home.join(".cache/seamcut-cuda/cuda-pip/nvidia/cu13/lib/libnvrtc.so.13"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .map(|p| (p, false))
}

type Prog = *mut c_void;

struct Nvrtc {
    lib: libloading::Library,
    /// NVRTC dlopens its builtins by name; loaded first from NVRTC's own folder, they are found
    /// without LD_LIBRARY_PATH.
    _builtins: Option<libloading::Library>,
}

impl Nvrtc {
    fn sym<T>(&self, name: &str) -> libloading::Symbol<'_, T> {
        // SAFETY: the signatures below are NVRTC's (nvrtc.h, CUDA 13).
        unsafe { self.lib.get(name.as_bytes()) }.unwrap_or_else(|e| panic!("NVRTC lacks {name}: {e}"))
    }

    fn error(&self, code: c_int) -> String {
        let f = self.sym::<unsafe extern "C" fn(c_int) -> *const c_char>("nvrtcGetErrorString");
        // SAFETY: NVRTC returns a static string.
        unsafe { CStr::from_ptr(f(code)) }.to_string_lossy().into_owned()
    }

    /// Compile `src` with seamcut's options: the PTX, or the error and NVRTC's log.
    fn compile(&self, name: &str, src: &str) -> Result<String, String> {
        let create = self.sym::<unsafe extern "C" fn(
            *mut Prog,
            *const c_char,
            *const c_char,
            c_int,
            *const *const c_char,
            *const *const c_char,
        ) -> c_int>("nvrtcCreateProgram");
        let compile = self
            .sym::<unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int>("nvrtcCompileProgram");
        let log_size = self.sym::<unsafe extern "C" fn(Prog, *mut usize) -> c_int>("nvrtcGetProgramLogSize");
        let log = self.sym::<unsafe extern "C" fn(Prog, *mut c_char) -> c_int>("nvrtcGetProgramLog");
        let ptx_size = self.sym::<unsafe extern "C" fn(Prog, *mut usize) -> c_int>("nvrtcGetPTXSize");
        let get_ptx = self.sym::<unsafe extern "C" fn(Prog, *mut c_char) -> c_int>("nvrtcGetPTX");
        let destroy = self.sym::<unsafe extern "C" fn(*mut Prog) -> c_int>("nvrtcDestroyProgram");
        let (csrc, cname) = (CString::new(src).unwrap(), CString::new(name).unwrap());
        let opts: Vec<CString> = NVRTC_OPTIONS.iter().map(|o| CString::new(*o).unwrap()).collect();
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Prog = std::ptr::null_mut();
        // SAFETY: NVRTC's C API used as documented; buffers sized by the matching *Size calls.
        unsafe {
            let rc = create(&mut prog, csrc.as_ptr(), cname.as_ptr(), 0, std::ptr::null(), std::ptr::null());
            if rc != 0 {
                return Err(format!("nvrtcCreateProgram: {}", self.error(rc)));
            }
            let rc = compile(prog, opt_ptrs.len() as c_int, opt_ptrs.as_ptr());
            let mut n = 0usize;
            log_size(prog, &mut n);
            let mut buf = vec![0u8; n.max(1)];
            log(prog, buf.as_mut_ptr().cast());
            let log_text = String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string();
            let out = if rc == 0 {
                let mut m = 0usize;
                ptx_size(prog, &mut m);
                let mut p = vec![0u8; m.max(1)];
                get_ptx(prog, p.as_mut_ptr().cast());
                Ok(String::from_utf8_lossy(&p).trim_end_matches('\0').to_string())
            } else {
                Err(format!("{}\n{log_text}", self.error(rc)))
            };
            destroy(&mut prog);
            out
        }
    }
}

#[test]
fn every_kernel_compiles_to_ptx_the_driver_can_load() {
    let Some((path, required)) = nvrtc_path() else {
        eprintln!("skipped: no NVRTC found (run scripts/fetch-nvrtc.sh or set SEAMCUT_NVRTC)");
        return;
    };
    // SAFETY: loading NVRTC runs its initialisers, nothing else.
    let lib = match unsafe { libloading::Library::new(&path) } {
        Ok(lib) => lib,
        Err(e) if !required => {
            eprintln!("skipped: cannot load {}: {e}", path.display());
            return;
        }
        Err(e) => panic!("SEAMCUT_NVRTC={} cannot be loaded: {e}", path.display()),
    };
    let builtins = path.with_file_name("libnvrtc-builtins.so.13.0");
    // SAFETY: as above.
    let builtins = builtins.is_file().then(|| unsafe { libloading::Library::new(&builtins) }.ok()).flatten();
    let nvrtc = Nvrtc { lib, _builtins: builtins };
    assert_eq!(SOURCES.len(), ENTRY_POINTS.len());
    for ((name, src), (ename, entries)) in SOURCES.iter().zip(ENTRY_POINTS) {
        assert_eq!(name, ename);
        let ptx =
            nvrtc.compile(name, src).unwrap_or_else(|e| panic!("kernels/{name} does not compile:\n{e}"));
        for entry in *entries {
            assert!(ptx.contains(&format!(".entry {entry}(")), "kernels/{name}: no entry point {entry}");
        }
        // The GPU machines run driver 580 (CUDA 13.0), which JIT-compiles PTX up to ISA 9.0.
        let version = ptx.lines().find_map(|l| l.strip_prefix(".version ")).expect("PTX has a .version");
        let (major, minor) = version.trim().split_once('.').expect("version is major.minor");
        let (major, minor): (u32, u32) = (major.parse().unwrap(), minor.parse().unwrap());
        assert!((major, minor) <= (9, 0), "kernels/{name}: PTX ISA {version} is newer than driver 580 loads");
        assert!(ptx.contains(".target sm_75"), "kernels/{name}: PTX not for compute 7.5");
    }
}

/// The kernels against their CPU references on a real GPU (a `cuda` build on a machine with one).
#[cfg(feature = "cuda")]
#[test]
fn cuda_kernels_match_the_cpu_references() {
    use candle_core::{DType, Device, Tensor};
    use seamcut::kernels::{
        band_many, band_reference, pool, pool_reference, pool_spans, pool_spans_reference,
    };
    let Ok(dev) = Device::new_cuda(0) else {
        eprintln!("skipped: no CUDA device");
        return;
    };
    let dim = 384;
    let lens = [1usize, 7, 0, 31, 128, 3];
    let tokens: usize = lens.iter().sum();
    let hidden: Vec<f32> = (0..tokens * dim).map(|i| ((i * 7919 % 997) as f32 / 498.0) - 1.0).collect();
    let mut cu = vec![0u32];
    for l in lens {
        cu.push(cu.last().unwrap() + l as u32);
    }
    for cls in [false, true] {
        let want = pool_reference(&hidden, &cu, dim, cls);
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let h = Tensor::from_slice(&hidden, (tokens, dim), &dev).unwrap().to_dtype(dtype).unwrap();
            // The reference on the same rounded inputs.
            let rounded: Vec<f32> = h.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            let want_rounded = pool_reference(&rounded, &cu, dim, cls);
            let got: Vec<f32> = pool(&h, &cu, cls).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            for (i, (a, b)) in got.iter().zip(&want_rounded).enumerate() {
                assert!((a - b).abs() < 1e-5, "pool {dtype:?} cls={cls} at {i}: {a} vs {b}");
            }
            if dtype == DType::F32 {
                assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5));
            }
        }
    }
    // Span sums: runs of rows in any order, empty, overlapping, one row, all rows; then
    // normalised.
    let starts = [0u32, 5, 8, 8, 40, 0, 169];
    let ends = [1u32, 8, 8, 39, 170, tokens as u32, 170];
    for unit in [false, true] {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let h = Tensor::from_slice(&hidden, (tokens, dim), &dev).unwrap().to_dtype(dtype).unwrap();
            let rounded: Vec<f32> = h.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            let want = pool_spans_reference(&rounded, &starts, &ends, dim, unit);
            let out = pool_spans(&h, &starts, &ends, unit).unwrap();
            assert!(out.device().is_cuda(), "pooled on the device");
            let got: Vec<f32> = out.flatten_all().unwrap().to_vec1().unwrap();
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                // Sums of up to 170 rows of magnitude 1: the order of float additions only.
                let tol = if unit { 1e-5 } else { 1e-4 * (1.0 + b.abs()) };
                assert!((a - b).abs() < tol, "pool_spans {dtype:?} unit={unit} at {i}: {a} vs {b}");
            }
        }
    }
    let rows = lens.len() * 40;
    let mut v = hidden[..rows * dim].to_vec();
    for r in v.chunks_mut(dim) {
        let n = r.iter().map(|x| x * x).sum::<f32>().sqrt();
        r.iter_mut().for_each(|x| *x /= n);
    }
    let offsets = [0usize, 10, 11, 11, 100, rows];
    let mut first = Vec::new();
    for w in offsets.windows(2) {
        first.extend(std::iter::repeat_n(w[0] as u32, w[1] - w[0]));
    }
    for width in [1usize, 17, 64] {
        let t = Tensor::from_slice(&v, (rows, dim), &dev).unwrap();
        let got: Vec<f32> = band_many(&t, &offsets, width).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let want = band_reference(&v, &first, dim, width);
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((a - b).abs() < 1e-5, "band width {width} at {i}: {a} vs {b}");
        }
    }
}
