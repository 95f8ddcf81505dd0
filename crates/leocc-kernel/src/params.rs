//! The parameters new LeoCC flows start from: one `struct leocc_params_entry` (bpf/leocc.bpf.c)
//! in a pinned ARRAY map. Unset, every flow starts from `leocc_default_params()`; set, from the
//! given parameters (`leocc kernel params --set`, parameter sweeps in the emulator). A flow keeps
//! what it started with, so a change reaches new connections only.

use std::path::Path;

pub use leocc_core_sys::Params;
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::KernelError;

/// The pinned params ARRAY map.
pub const PARAMS_PIN: &str = "/sys/fs/bpf/leocc/params";

/// `struct leocc_params_entry`, byte for byte: a set flag, then `struct leocc_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Entry {
    set: u32,
    params: Params,
}

impl Entry {
    fn to_bytes(self) -> Vec<u8> {
        // SAFETY: Entry is repr(C) and made of u32s only: no padding, any bytes are valid.
        unsafe { std::slice::from_raw_parts((&self as *const Entry).cast::<u8>(), std::mem::size_of::<Entry>()) }.to_vec()
    }

    fn from_bytes(b: &[u8]) -> Option<Entry> {
        if b.len() != std::mem::size_of::<Entry>() {
            return None;
        }
        // SAFETY: length checked; every bit pattern is a valid Entry (u32s only).
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<Entry>()) })
    }
}

fn map_error(reason: String) -> KernelError {
    KernelError::ParamsMap { path: PARAMS_PIN.into(), reason }
}

fn open() -> Result<MapHandle, KernelError> {
    MapHandle::from_pinned_path(Path::new(PARAMS_PIN))
        .map_err(|e| map_error(format!("{e} (is this build's leocc loaded? `leocc kernel load` pins it)")))
}

/// `base` with `leocc.NAME=VALUE` settings applied in order, each by the core's one parser
/// ([`Params::parse`]: unknown names, non-integers and values outside the core's range are
/// refused, naming the range): `leocc kernel params --set` and the emulator's `--param`. Only
/// LeoCC takes parameters in the kernel: a setting for another control is an error. Errors
/// start with the setting, quoted.
pub fn apply_settings(base: Params, settings: &[String]) -> Result<Params, String> {
    let mut p = base;
    for s in settings {
        let (name, value) = match s.split_once('.') {
            Some(("leocc", setting)) => setting.split_once('='),
            Some((cc, setting)) if setting.contains('=') && !cc.contains('=') => {
                return Err(format!("'{s}': only LeoCC (BPF) takes parameters in the kernel; {cc} has none to set"));
            }
            _ => None,
        }
        .ok_or_else(|| format!("'{s}': expected leocc.NAME=VALUE, e.g. leocc.delta_rtt_us=0"))?;
        p.parse(name, value).map_err(|e| format!("'{s}': {e}"))?;
    }
    Ok(p)
}

/// Sets the parameters of new flows; `None` returns them to the defaults.
pub fn write_params(params: Option<&Params>) -> Result<(), KernelError> {
    let entry = Entry { set: u32::from(params.is_some()), params: params.copied().unwrap_or_default() };
    open()?
        .update(&0u32.to_ne_bytes(), &entry.to_bytes(), MapFlags::ANY)
        .map_err(|e| map_error(format!("update failed: {e}")))
}

/// The parameters new flows start from: `None` when they are the defaults.
pub fn read_params() -> Result<Option<Params>, KernelError> {
    let bytes = open()?
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| map_error(format!("lookup failed: {e}")))?
        .unwrap_or_default();
    let entry = Entry::from_bytes(&bytes).ok_or_else(|| {
        map_error(format!("value is {} bytes, expected {} (a different leocc build pinned it)", bytes.len(), std::mem::size_of::<Entry>()))
    })?;
    Ok((entry.set != 0).then_some(entry.params))
}

/// Sets the parameters of new flows for as long as it lives and returns them to the defaults
/// when dropped, on an error path or a panic as well: an emulator run with swept parameters
/// must not leave them for the next one.
pub struct ParamsGuard(());

impl ParamsGuard {
    /// Sets `params` for new flows.
    pub fn set(params: &Params) -> Result<ParamsGuard, KernelError> {
        write_params(Some(params))?;
        Ok(ParamsGuard(()))
    }
}

impl Drop for ParamsGuard {
    fn drop(&mut self) {
        if let Err(e) = write_params(None) {
            eprintln!("leocc: could not return LeoCC's parameters to the defaults: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_through_its_bytes_and_a_wrong_size_is_refused() {
        let mut p = Params::default();
        p.set("cycle_len", 12).unwrap();
        let e = Entry { set: 1, params: p };
        let back = Entry::from_bytes(&e.to_bytes()).unwrap();
        assert_eq!((back.set, back.params), (1, p));
        assert!(Entry::from_bytes(&e.to_bytes()[1..]).is_none());
    }

    #[test]
    fn settings_are_parsed_by_the_core_and_only_leoccs_are_taken() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let p = apply_settings(Params::default(), &s(&["leocc.cycle_len=12", "leocc.delta_rtt_us = 0"])).unwrap();
        assert_eq!(p, Params { cycle_len: 12, delta_rtt_us: 0, ..Params::default() });
        let e = apply_settings(p, &s(&["leocc.min_cwnd=4294967295"])).unwrap_err();
        assert!(e.starts_with("'leocc.min_cwnd=4294967295': LeoCC parameter 'min_cwnd' = 4294967295 is out of range: it must be in 2..=1000"), "{e}");
        let e = apply_settings(p, &s(&["leocc.cycle_lenn=4"])).unwrap_err();
        assert!(e.contains("did you mean cycle_len?"), "{e}");
        assert!(apply_settings(p, &s(&["cubic.beta=0.5"])).unwrap_err().contains("only LeoCC (BPF) takes parameters"));
        assert!(apply_settings(p, &s(&["cycle_len=4"])).unwrap_err().contains("expected leocc.NAME=VALUE"));
        assert!(apply_settings(p, &s(&["leocc.cycle_len"])).unwrap_err().contains("expected leocc.NAME=VALUE"));
    }

    /// The mirror against the compiled object's own BTF (the skeleton's generated type of
    /// bpf/leocc.bpf.c's `struct leocc_params_entry`), field by field; `Params` itself is held to
    /// `struct leocc_params` in leocc-core-sys.
    #[cfg(not(leocc_no_bpf))]
    #[test]
    fn the_entry_is_the_compiled_objects() {
        use crate::skel::types::leocc_params_entry as C;
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<C>(), size_of::<Entry>());
        assert_eq!(offset_of!(C, set), offset_of!(Entry, set));
        assert_eq!(offset_of!(C, p), offset_of!(Entry, params));
    }
}
