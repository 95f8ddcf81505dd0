//! `leocc emu ... -- CMD`: run a command in the client namespace behind the emulated link,
//! like a mahimahi shell, and clean up whatever happens.
//!
//! Order of events: everything that can be checked without root state is checked first (the
//! traces were loaded by the caller, the programs must exist), then the namespaces and
//! devices are created, the optional server command starts in the server namespace (we wait
//! until it listens on a socket, up to `SERVER_READY_TIMEOUT_MS`), then CMD runs in the client
//! namespace. When CMD exits (normally, by a crash, or because we were told to stop) the
//! server command's process group is terminated, the emulator stops and prints its summary,
//! and the namespaces are removed. The exit code is CMD's (128 + signal if it was killed).
//!
//! Signals: SIGTERM and SIGHUP terminate CMD (SIGTERM, then SIGKILL after
//! `KILL_GRACE_MS`). SIGINT is left to CMD, as a shell does: Ctrl-C at the terminal reaches
//! CMD directly (it is the terminal's foreground group while it runs), and a SIGINT sent to
//! leocc with kill(2) is forwarded to CMD; an interactive shell inside survives it, `iperf3
//! -c` ends on it.
//!
//! Nothing outlives leocc: CMD and the server command each lead a process group of their own
//! and die with leocc (`owned`: PR_SET_PDEATHSIG, so even `kill -9` of leocc takes them
//! down); when CMD exits, whatever it left in its group is terminated; removing the
//! namespaces kills anything still inside them.

use crate::emulator::{EmuConfig, Emulator, Side, Summary};
use crate::error::{EmuError, Result};
use crate::owned::{own_group, terminate_group, KILL_GRACE_MS};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leocc_base::signal::Handler;

/// How long to wait for --server-cmd to open a socket before starting CMD anyway.
pub const SERVER_READY_TIMEOUT_MS: u64 = 3000;
/// Polling period while waiting for children, ms.
const WAIT_POLL_MS: u64 = 10;

static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether the pending SIGINT was sent with kill(2) (the child then did not get it) rather
/// than by the terminal (which signals the whole foreground group, the child included).
static SIGINT_FROM_KILL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if sig == libc::SIGINT && !info.is_null() {
        // SAFETY: the kernel passes a valid siginfo_t with SA_SIGINFO.
        let code = unsafe { (*info).si_code };
        SIGINT_FROM_KILL.store(code == libc::SI_USER || code == libc::SI_QUEUE, Ordering::SeqCst);
    }
    PENDING_SIGNAL.store(sig, Ordering::SeqCst);
}

pub(crate) fn install_signal_handlers() {
    // The handler only stores into atomics, which is async-signal-safe.
    leocc_base::signal::install(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], Handler::Info(on_signal), true);
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ShellSpec {
    /// CMD and its arguments, run in the client namespace.
    pub cmd: Vec<String>,
    /// A shell command line run with `sh -c` in the server namespace.
    pub server_cmd: Option<String>,
}

/// Finds `program` like execvp would; an error names the program.
pub fn resolve_program(program: &str) -> Result<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.is_file() && p.metadata().map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if is_exec(&p) { Ok(p) } else { Err(EmuError::msg(format!("{program}: no such executable"))) };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
        .ok_or_else(|| EmuError::msg(format!("{program}: command not found in PATH")))
}

/// Checks everything about `spec` that can be checked before creating namespaces.
pub fn check(spec: &ShellSpec) -> Result<()> {
    let Some(first) = spec.cmd.first() else { return Err(EmuError::msg("no command given after --")) };
    resolve_program(first)?;
    if let Some(sc) = &spec.server_cmd {
        resolve_program("sh")?;
        let word = sc.split_whitespace().next().ok_or_else(|| EmuError::msg("--server-cmd is empty"))?;
        if !is_shell_syntax(word) {
            resolve_program(word).map_err(|e| EmuError::msg(format!("--server-cmd: {e}")))?;
        }
    }
    check_privileges()
}

/// Words a shell handles itself, which need no executable.
fn is_shell_syntax(word: &str) -> bool {
    const BUILTINS: &[&str] = &["exec", "cd", "export", "set", "for", "while", "if", "{", "(", "true", "false", ":", "."];
    BUILTINS.contains(&word) || word.contains('=') || word.starts_with('(')
}

/// Root (CAP_NET_ADMIN) and /dev/net/tun are needed for namespaces and TUN devices.
pub fn check_privileges() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::msg("the emulator needs root (network namespaces and TUN devices)"));
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(EmuError::msg("/dev/net/tun is missing (no TUN support)"));
    }
    resolve_program("ip").map_err(|_| EmuError::msg("`ip` (iproute2) is not installed"))?;
    Ok(())
}

/// Runs the shell; returns CMD's exit code and the emulator's summary.
pub fn run(cfg: &EmuConfig, spec: &ShellSpec) -> Result<(i32, Summary)> {
    check(spec)?;
    install_signal_handlers();
    let emu = Emulator::start(cfg)?;
    let mut server = match &spec.server_cmd {
        Some(sc) => {
            let mut c = emu.command(Side::Server, "sh");
            own_group(c.arg("-c").arg(sc));
            let mut b = Background::spawn(c, format!("--server-cmd {sc:?}"))?;
            if let Err(e) = b.wait_until_listening() {
                terminate_group(&mut b.child);
                drop(emu.stop());
                return Err(e);
            }
            vec![b]
        }
        None => Vec::new(),
    };
    let tty = foreground_terminal();
    let mut c = emu.command(Side::Client, &spec.cmd[0]);
    own_group(c.args(&spec.cmd[1..]));
    if let Some(fd) = tty {
        // SAFETY: runs in the child after setpgid, before exec; sigprocmask and tcsetpgrp are
        // async-signal-safe. Done in the child too so that CMD cannot read the terminal
        // before it is in the foreground (it would be stopped by SIGTTIN).
        unsafe { c.pre_exec(move || { give_terminal(fd, libc::getpid()); Ok(()) }) };
    }
    let code = match c.spawn() {
        Ok(mut child) => {
            if let Some(fd) = tty {
                give_terminal(fd, child.id() as libc::pid_t);
            }
            let code = supervise(&mut child, &mut server);
            if let Some(fd) = tty {
                // SAFETY: getpgrp has no preconditions.
                give_terminal(fd, unsafe { libc::getpgrp() });
            }
            // What CMD started and left behind in its group.
            terminate_group(&mut child);
            Ok(code)
        }
        Err(e) => Err(EmuError::io(format!("start {}", spec.cmd[0]), e)),
    };
    for s in server.iter_mut() {
        terminate_group(&mut s.child);
    }
    let summary = emu.stop();
    Ok((code?, summary))
}

/// The terminal on stdin, when leocc is in its foreground: CMD, in a process group of its
/// own, must then become the foreground group for Ctrl-C and terminal input to reach it.
fn foreground_terminal() -> Option<libc::c_int> {
    // SAFETY: isatty, tcgetpgrp and getpgrp have no preconditions.
    unsafe { (libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp()).then_some(0) }
}

/// Makes `pgid` the foreground group of terminal `fd`. SIGTTOU is blocked meanwhile: a
/// process outside the foreground group gets it for tcsetpgrp and would stop.
fn give_terminal(fd: libc::c_int, pgid: libc::pid_t) {
    // SAFETY: plain system calls on a valid signal set and descriptor; async-signal-safe.
    unsafe {
        let (mut set, mut old): (libc::sigset_t, libc::sigset_t) = (std::mem::zeroed(), std::mem::zeroed());
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        libc::tcsetpgrp(fd, pgid);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// Waits for CMD, reacting to signals, and says at once when one of the `background`
/// commands fails meanwhile; returns CMD's exit code.
pub(crate) fn supervise(child: &mut Child, background: &mut [Background]) -> i32 {
    let mut term_sent: Option<Instant> = None;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        }
        for b in background.iter_mut() {
            if let Some(report) = b.exited_with_failure() {
                eprintln!("leocc: {report}");
            }
        }
        match PENDING_SIGNAL.swap(0, Ordering::SeqCst) {
            0 => {}
            libc::SIGINT if SIGINT_FROM_KILL.load(Ordering::SeqCst) => send(child.id(), libc::SIGINT),
            libc::SIGINT => {}
            _ => {
                send(child.id(), libc::SIGTERM);
                term_sent.get_or_insert_with(Instant::now);
            }
        }
        if term_sent.is_some_and(|t| t.elapsed() > Duration::from_millis(KILL_GRACE_MS)) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(WAIT_POLL_MS));
    }
}

fn send(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Lines of a background command's stderr kept to report its early exit.
const TAIL_LINES: usize = 5;

/// A command started beside CMD (`--server-cmd`, `--node-cmd`): its stderr still reaches ours
/// line by line, and its last lines are kept so that an early exit can be reported with them
/// instead of CMD failing later for want of a server.
pub struct Background {
    /// The `sh -c` process, leader of its own process group.
    pub child: Child,
    /// The option and command line, for messages: `--server-cmd 'iperf3 -s'`.
    what: String,
    tail: Arc<Mutex<VecDeque<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// The exit was reported already.
    reported: bool,
}

impl Background {
    /// Starts `cmd` (whose stderr is taken over here); `what` names it in messages.
    pub fn spawn(mut cmd: Command, what: String) -> Result<Background> {
        cmd.stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| EmuError::io(format!("start {what}"), e))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr = child.stderr.take();
        let keep = Arc::clone(&tail);
        let reader = stderr.map(|err| {
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
                    eprintln!("{line}");
                    let mut t = keep.lock().unwrap_or_else(|p| p.into_inner());
                    if t.len() == TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            })
        });
        Ok(Background { child, what, tail, reader, reported: false })
    }

    /// Waits (up to `SERVER_READY_TIMEOUT_MS`) until the command's namespace has a listening
    /// TCP or a bound UDP socket. An exit with a failure before that is an error with its
    /// status and last stderr lines; an exit with success (a server that daemonizes) is not.
    pub fn wait_until_listening(&mut self) -> Result<()> {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(SERVER_READY_TIMEOUT_MS) {
            if has_socket(self.child.id()) {
                return Ok(());
            }
            if let Some(report) = self.exited_with_failure() {
                return Err(EmuError::msg(report));
            }
            if self.reported {
                return Ok(()); // exited with success: nothing more to wait for
            }
            std::thread::sleep(Duration::from_millis(WAIT_POLL_MS));
        }
        Ok(())
    }

    /// Once, when the command has exited: the report of a failure (its status and last
    /// stderr lines), None for success or while it runs.
    pub fn exited_with_failure(&mut self) -> Option<String> {
        if self.reported {
            return None;
        }
        let status = self.child.try_wait().ok().flatten()?;
        self.reported = true;
        if status.success() {
            return None;
        }
        // Let the reader take in what the command wrote last (briefly: a process the command
        // left behind may hold the pipe open).
        if let Some(r) = self.reader.take() {
            let until = Instant::now() + Duration::from_millis(200);
            while !r.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(WAIT_POLL_MS));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let last = if tail.is_empty() {
            " (it wrote nothing to stderr)".to_string()
        } else {
            format!("; its last stderr lines:\n  {}", tail.iter().cloned().collect::<Vec<_>>().join("\n  "))
        };
        Some(format!("{} exited early with {status}{last}", self.what))
    }
}

/// Waits (up to `SERVER_READY_TIMEOUT_MS`) until the namespace of `pid` has a listening TCP or
/// a bound UDP socket.
pub fn wait_until_listening(pid: u32) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(SERVER_READY_TIMEOUT_MS) {
        if has_socket(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(WAIT_POLL_MS));
    }
}

/// /proc/PID/net shows the network namespace of PID.
fn has_socket(pid: u32) -> bool {
    const TCP_LISTEN: &str = "0A";
    let read = |t: &str| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).unwrap_or_default();
    let listening = |text: String| text.lines().skip(1).any(|l| l.split_whitespace().nth(3) == Some(TCP_LISTEN));
    let bound = |text: String| text.lines().count() > 1;
    listening(read("tcp")) || listening(read("tcp6")) || bound(read("udp")) || bound(read("udp6"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_programs_are_reported_by_name() {
        let spec = ShellSpec { cmd: vec!["leocc-no-such-program".into()], server_cmd: None };
        let e = check(&spec).unwrap_err().to_string();
        assert!(e.contains("leocc-no-such-program"), "{e}");
        let spec = ShellSpec { cmd: vec!["sh".into()], server_cmd: Some("leocc-no-such-server -s".into()) };
        let e = check(&spec).unwrap_err().to_string();
        assert!(e.contains("leocc-no-such-server"), "{e}");
        assert!(check(&ShellSpec { cmd: vec![], server_cmd: None }).is_err());
    }
}
