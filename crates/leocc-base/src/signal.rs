//! The one signal-handler installer of every command that must clean up on SIGINT, SIGTERM or
//! SIGHUP (network namespaces, pid files, certificate directories) instead of dying.
//!
//! The commands differ in what their handlers do and in two choices this module leaves to
//! them, so each passes its own handler (it must be async-signal-safe: in practice, store to
//! an atomic) and says:
//!
//! - whether interrupted system calls restart (`SA_RESTART`, what `signal(3)` gives): the
//!   emulator, `eval`'s emulator engine and `leocc leotp` restart them and poll their flag;
//!   the probe daemon and `leocc quic serve` do not, so a blocking `poll`/`accept` returns
//!   EINTR and the loop sees the flag at once;
//! - whether the handler needs the `siginfo_t` ([`Handler::Info`], `SA_SIGINFO`): the
//!   emulator's shell tells a SIGINT sent with kill(2) from one typed at the terminal.

use libc::c_int;

/// A signal handler.
#[derive(Clone, Copy)]
pub enum Handler {
    /// `void handler(int)`.
    Plain(extern "C" fn(c_int)),
    /// `void handler(int, siginfo_t *, void *)`, installed with `SA_SIGINFO`.
    Info(extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void)),
}

/// Installs `handler` for each of `signals` with sigaction(2): an empty extra mask (the
/// signal itself is blocked while its handler runs), `SA_RESTART` when `restart`.
/// `signal(sig, h)` of glibc is this with `restart` true.
pub fn install(signals: &[c_int], handler: Handler, restart: bool) {
    let (action, info) = match handler {
        Handler::Plain(h) => (h as usize, 0),
        Handler::Info(h) => (h as usize, libc::SA_SIGINFO),
    };
    for &sig in signals {
        // SAFETY: a zeroed sigaction is valid; the mask is initialised before use, and the
        // handler's signature matches the SA_SIGINFO flag.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = action;
            sa.sa_flags = info | if restart { libc::SA_RESTART } else { 0 };
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, Ordering};

    static GOT: AtomicI32 = AtomicI32::new(0);

    extern "C" fn on_usr(sig: c_int) {
        GOT.store(sig, Ordering::SeqCst);
    }

    #[test]
    fn installs_a_handler_with_the_asked_flags() {
        install(&[libc::SIGUSR2], Handler::Plain(on_usr), false);
        // SAFETY: reading the current action; raising a signal whose handler is installed.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut old);
            assert_eq!(old.sa_sigaction, on_usr as extern "C" fn(c_int) as usize);
            assert_eq!(old.sa_flags & (libc::SA_RESTART | libc::SA_SIGINFO), 0);
            libc::raise(libc::SIGUSR2);
        }
        assert_eq!(GOT.load(Ordering::SeqCst), libc::SIGUSR2);
        install(&[libc::SIGUSR2], Handler::Plain(on_usr), true);
        // SAFETY: as above.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut old);
            assert_ne!(old.sa_flags & libc::SA_RESTART, 0);
        }
    }
}
