//! Probe: is a usable CUDA driver + device present? Never panics.
//!
//! cudarc (with dynamic loading) panics on the first call into a library it
//! cannot find, so the probe first checks that `libcuda` and `libnvrtc` can be
//! dlopened, and only then makes driver calls (inside `catch_unwind` as a
//! second line of defence).

/// What the probe found.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    pub available: bool,
    /// Why not available, or a one-line summary when available.
    pub reason: String,
    pub device_count: usize,
    pub device_name: Option<String>,
    pub compute_capability: Option<(i32, i32)>,
    pub total_memory: Option<usize>,
}

#[cfg(not(feature = "cuda"))]
pub fn probe() -> Probe {
    Probe {
        reason: "built without CUDA support (enable the `cuda` feature)".into(),
        ..Default::default()
    }
}

#[cfg(feature = "cuda")]
pub fn probe() -> Probe {
    let unavailable = |reason: String| Probe {
        reason,
        ..Default::default()
    };
    // SAFETY: these only try to dlopen the libraries.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return unavailable("CUDA driver library (libcuda) not found".into());
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return unavailable("NVRTC library (libnvrtc) not found".into());
    }
    // Device queries only: no context is created here (the backend creates the one
    // it uses; creating one here too would double the start-up cost).
    let r = std::panic::catch_unwind(|| -> Result<Probe, String> {
        use cudarc::driver::{result, sys};
        result::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
        let count = result::device::get_count().map_err(|e| format!("device count: {e:?}"))?;
        if count <= 0 {
            return Err("no CUDA device".into());
        }
        let dev = result::device::get(0).map_err(|e| format!("device 0: {e:?}"))?;
        let name = result::device::get_name(dev).map_err(|e| format!("{e:?}"))?;
        // SAFETY: `dev` is a valid device handle from cuDeviceGet.
        let (major, minor, mem) = unsafe {
            let attr = |a| result::device::get_attribute(dev, a).map_err(|e| format!("{e:?}"));
            (
                attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
                result::device::total_mem(dev).map_err(|e| format!("{e:?}"))?,
            )
        };
        let cc = (major, minor);
        Ok(Probe {
            available: true,
            reason: format!(
                "{name}, sm_{}{}, {:.1} GiB",
                cc.0,
                cc.1,
                mem as f64 / (1u64 << 30) as f64
            ),
            device_count: count as usize,
            device_name: Some(name),
            compute_capability: Some(cc),
            total_memory: Some(mem),
        })
    });
    match r {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => unavailable(e),
        Err(_) => unavailable("CUDA library call panicked".into()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_never_panics() {
        let p = super::probe();
        if !p.available {
            assert!(!p.reason.is_empty());
        }
    }
}
