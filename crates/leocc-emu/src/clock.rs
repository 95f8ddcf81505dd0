//! The emulation clock and precise waiting.
//!
//! Emulation time is CLOCK_MONOTONIC in µs since the emulator started (trace time 0). To
//! release a packet at time T the engine sleeps in `ppoll` on its input device until
//! T - `spin_us` (so an arriving packet still wakes it at once), then spins, polling the
//! device without blocking, until T. With the thread's timer slack set to 1 ns the kernel
//! wakes the sleeper within tens of µs; the spin absorbs that lateness. The spin margin is a
//! trade of CPU for precision, measured by `leocc bench-emu`.
//!
//! The engine threads run at SCHED_FIFO so that ordinary processes do not delay a release,
//! but not while one is saturated: the kernel's RT throttling would stop it for 50 ms every
//! second (`Priority`).

/// Default spin margin before a deadline, µs.
pub const DEFAULT_SPIN_US: u64 = 20;
/// Longest sleep when nothing is scheduled, µs (bounds how late a stop request is seen).
pub const IDLE_WAIT_US: u64 = 20_000;
/// Timer slack for emulator threads, ns (the kernel default of 50 µs would blur deadlines).
const TIMER_SLACK_NS: libc::c_ulong = 1;

/// Monotonic time in ns.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time in µs since the Unix epoch.
pub fn unix_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The emulation clock: time zero is when the emulator started.
#[derive(Debug, Clone, Copy)]
pub struct EmuClock {
    t0_ns: u64,
    unix_t0_us: u64,
}

impl EmuClock {
    /// A clock whose zero is now.
    pub fn start() -> EmuClock {
        EmuClock { t0_ns: mono_ns(), unix_t0_us: unix_us() }
    }

    /// Emulation time in ns.
    pub fn now_ns(&self) -> u64 {
        mono_ns().saturating_sub(self.t0_ns)
    }

    /// Emulation time in µs.
    pub fn now_us(&self) -> u64 {
        self.now_ns() / 1000
    }

    /// Monotonic ns of emulation time zero (to align other measurements with the trace).
    pub fn t0_mono_ns(&self) -> u64 {
        self.t0_ns
    }

    /// Unix µs of emulation time `t_us`.
    pub fn unix_us_at(&self, t_us: u64) -> u64 {
        self.unix_t0_us + t_us
    }
}

/// Sets the calling thread's timer slack to 1 ns.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0) };
}

/// Waits until `fd` is readable or emulation time reaches `deadline_us`.
pub fn wait_readable_until(clock: &EmuClock, fd: i32, deadline_us: u64, spin_us: u64) {
    let deadline_ns = deadline_us * 1000;
    let now = clock.now_ns();
    if deadline_ns <= now {
        return;
    }
    let sleep_ns = (deadline_ns - now).saturating_sub(spin_us * 1000);
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    if sleep_ns > 0 {
        let ts = libc::timespec { tv_sec: (sleep_ns / 1_000_000_000) as libc::time_t, tv_nsec: (sleep_ns % 1_000_000_000) as libc::c_long };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
        let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if n != 0 {
            return;
        }
    }
    while clock.now_ns() < deadline_ns {
        // SAFETY: as above, with a zero timeout (no blocking).
        if unsafe { libc::poll(&mut pfd, 1, 0) } != 0 {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Real-time priority of the engine threads (SCHED_FIFO, low in the 1..99 range so that
/// kernel threads and anything the user raised still come first). It keeps ordinary
/// processes (compilers, the traffic generators themselves) from delaying a release by a
/// whole scheduler tick.
pub const REALTIME_PRIORITY: i32 = 10;
/// Nice value of an engine thread while it is too busy for SCHED_FIFO (see `Priority`).
const BUSY_NICE: i32 = -20;
/// How often a thread's busy share is checked, ns.
const BUSY_WINDOW_NS: u64 = 100_000_000;
/// Busy share above which a thread leaves SCHED_FIFO, and below which it returns to it: the
/// kernel's RT throttling stops a SCHED_FIFO thread that runs more than 95 % of a second for
/// the rest of that second (sched_rt_runtime_us), a 50 ms stall that floods the queues.
const BUSY_LEAVE_RT: f64 = 0.9;
const BUSY_RETURN_RT: f64 = 0.7;

/// Moves the calling thread to SCHED_FIFO at `REALTIME_PRIORITY`; false if not permitted.
pub fn try_realtime() -> bool {
    let param = libc::sched_param { sched_priority: REALTIME_PRIORITY };
    // SAFETY: pthread_setschedparam on the calling thread with a valid sched_param.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}

/// Moves the calling thread back to SCHED_OTHER at nice `BUSY_NICE` (the highest weight the
/// fair scheduler gives, so it still wins the CPU from ordinary processes at once).
fn leave_realtime() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above; setpriority on this thread's id only changes its nice value.
    unsafe {
        libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_OTHER, &param);
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, BUSY_NICE);
    }
}

/// An engine thread's scheduling: SCHED_FIFO while it leaves the CPU idle part of the time
/// (light load: no ordinary process delays a release), a fair-share thread at nice -20 while
/// it is busy nearly all the time (heavy load: the RT throttle would stop it for 50 ms every
/// second). Measured by `leocc bench emu`: under SCHED_FIFO alone, 1 Gbit/s already lost
/// ~0.4 % to the throttle's stalls.
pub struct Priority {
    allowed: bool,
    realtime: bool,
    window_start_ns: u64,
    window_cpu_us: u64,
}

impl Priority {
    /// Starts the calling thread at SCHED_FIFO if `allowed` (and permitted).
    pub fn start(allowed: bool, now_ns: u64) -> Priority {
        let realtime = allowed && try_realtime();
        Priority { allowed, realtime, window_start_ns: now_ns, window_cpu_us: thread_cpu_us() }
    }

    /// Checks the busy share once per window and moves the thread between the two policies.
    pub fn update(&mut self, now_ns: u64) {
        if !self.allowed || now_ns.saturating_sub(self.window_start_ns) < BUSY_WINDOW_NS {
            return;
        }
        let cpu = thread_cpu_us();
        let busy = cpu.saturating_sub(self.window_cpu_us) as f64 * 1000.0 / (now_ns - self.window_start_ns) as f64;
        (self.window_start_ns, self.window_cpu_us) = (now_ns, cpu);
        if self.realtime && busy > BUSY_LEAVE_RT {
            leave_realtime();
            self.realtime = false;
        } else if !self.realtime && busy < BUSY_RETURN_RT {
            self.realtime = try_realtime();
        }
    }
}

/// CPU time (user + system) used by the calling thread, µs.
pub fn thread_cpu_us() -> u64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread busy all the time leaves SCHED_FIFO (before the RT throttle could stop it) and
    /// returns once it idles. On a quiet machine it leaves within a window or two; the test
    /// allows ten, because on a shared machine time the hypervisor takes from the vCPU (steal)
    /// counts as idle in a window (a CI run once saw three windows under 0.9). Needs permission
    /// for SCHED_FIFO.
    #[test]
    fn a_busy_engine_thread_leaves_realtime_and_an_idle_one_returns() {
        std::thread::spawn(|| {
            let clock = EmuClock::start();
            let mut p = Priority::start(true, clock.now_ns());
            if !p.realtime {
                eprintln!("SKIP: SCHED_FIFO not permitted here");
                return;
            }
            // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
            let policy = || unsafe { libc::sched_getscheduler(0) };
            assert_eq!(policy(), libc::SCHED_FIFO);
            let t0 = clock.now_ns();
            while clock.now_ns() - t0 < 10 * BUSY_WINDOW_NS && policy() == libc::SCHED_FIFO {
                p.update(clock.now_ns());
            }
            assert_eq!(policy(), libc::SCHED_OTHER, "still SCHED_FIFO after {} ms of spinning", (clock.now_ns() - t0) / 1_000_000);
            // SAFETY: getpriority on this thread's id.
            assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }, BUSY_NICE);
            for _ in 0..30 {
                std::thread::sleep(std::time::Duration::from_millis(10));
                p.update(clock.now_ns());
            }
            assert_eq!(policy(), libc::SCHED_FIFO, "an idle thread goes back to SCHED_FIFO");
        })
        .join()
        .unwrap();
    }
}
