//! Children that never outlive the command that started them.
//!
//! Every long-running command (`leocc emu`, `leocc eval`, `emu-run`) starts its children
//! through [`die_with_parent`], and those that may start children of their own through
//! [`own_group`]: `kill -9` of the parent then takes the child down at once (the kernel sends
//! it SIGKILL, `PR_SET_PDEATHSIG`), and on a normal exit the parent kills the child's whole
//! group ([`terminate_group`]), stragglers included. Grandchildren do not inherit the death
//! signal; the emulator also kills whatever is left in its namespaces when it removes them
//! (see `netns`), which is also what `leocc emu --cleanup` does after a `kill -9`.
//!
//! Caveat: the kernel sends the death signal when the *thread* that spawned the child exits.
//! Spawn from a thread that outlives the child (the main thread, or one that waits for it).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How long a terminated group gets before SIGKILL.
pub const KILL_GRACE_MS: u64 = 2000;
/// Polling period while waiting for a child, ms.
const WAIT_POLL_MS: u64 = 10;

/// The child of `cmd` gets SIGKILL when the spawning thread dies, however it dies.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    die_with_parent_by(cmd, libc::SIGKILL)
}

/// [`die_with_parent`] with `signal` instead of SIGKILL: SIGTERM for a child that cleans up on
/// it (`leocc emu-run` removes its namespaces), so an interrupted parent leaves nothing behind.
pub fn die_with_parent_by(cmd: &mut Command, signal: libc::c_int) -> &mut Command {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2) and
    // getppid(2), both async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl; then nothing would signal us.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("the parent exited before the child started"));
            }
            Ok(())
        })
    }
}

/// [`die_with_parent`], and the child leads a new process group (its pid is the group id), so
/// [`terminate_group`] reaches everything it starts.
pub fn own_group(cmd: &mut Command) -> &mut Command {
    die_with_parent(cmd).process_group(0)
}

/// One live (not zombie) process, from /proc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    /// Process id.
    pub pid: u32,
    /// Parent's pid.
    pub ppid: u32,
    /// Process group id.
    pub pgrp: u32,
}

/// The live processes of the system (zombies, which are dead but not yet reaped, left out),
/// for checks that nothing outlived its parent.
pub fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            let mut f = stat.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?;
            let (ppid, pgrp) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
            (state != "Z" && state != "X").then_some(Proc { pid, ppid, pgrp })
        })
        .collect()
}

/// The live descendants of `pid` (children, their children, ...).
pub fn descendants(pid: u32) -> Vec<u32> {
    let all = processes();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(all.iter().filter(|q| q.ppid == p).map(|q| q.pid));
        i += 1;
    }
    out.remove(0);
    out
}

/// SIGTERM to the process group led by `child` (see [`own_group`]; the leader may already
/// have exited), then SIGKILL to whatever is left after [`KILL_GRACE_MS`]; reaps the leader.
/// Returns at once when the group is already empty.
pub fn terminate_group(child: &mut Child) {
    let pgid = child.id() as libc::pid_t;
    // SAFETY: kill(2) on the group our child leads; signal 0 only tests for members.
    let kill = |sig| unsafe { libc::kill(-pgid, sig) == 0 };
    kill(libc::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(KILL_GRACE_MS) {
        if matches!(child.try_wait(), Ok(Some(_))) && !kill(0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(WAIT_POLL_MS));
    }
    kill(libc::SIGKILL);
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits up to 5 s until `check` holds.
    fn eventually(check: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if check() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn alive(pid: u32) -> bool {
        processes().iter().any(|p| p.pid == pid)
    }

    /// The kernel treats the spawning thread's exit like the parent's death: a child started
    /// on a thread that then ends is killed, as it would be by `kill -9` of the parent.
    #[test]
    fn child_dies_with_its_parent() {
        let pid = std::thread::spawn(|| {
            let child = die_with_parent(Command::new("sleep").arg("30")).spawn().unwrap();
            let pid = child.id();
            std::mem::forget(child);
            pid
        })
        .join()
        .unwrap();
        assert!(eventually(|| !alive(pid)), "sleep {pid} outlived its parent");
        // SAFETY: reaping our own (killed) child.
        unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0) };
    }

    /// Terminating a group also ends what its leader started in the background.
    #[test]
    fn terminate_group_takes_the_stragglers() {
        let mut child = own_group(Command::new("sh").args(["-c", "sleep 30 & sleep 30 & wait"])).spawn().unwrap();
        let pgid = child.id();
        let in_group = move || processes().iter().filter(|p| p.pgrp == pgid).count();
        assert!(eventually(|| in_group() == 3), "sh and two sleeps in the group");
        terminate_group(&mut child);
        assert!(eventually(|| in_group() == 0), "processes left in group {pgid}");
    }
}
