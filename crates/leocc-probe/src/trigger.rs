//! Trigger expressions over the detector's measurement stream (seed 004's "if latency >
//! 10 × its moving average, run a traceroute"): `leocc probe --trigger 'EXPR' --exec 'CMD'`,
//! and the same expressions over a trace's timeline for `leocc eval --start-when`.
//!
//! The language, smallest to largest binding:
//!
//! ```text
//! expr := or ;  or := and ('||' and)* ;  and := not ('&&' not)* ;  not := '!' not | cmp
//! cmp  := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
//! sum  := prod (('+' | '-') prod)* ;  prod := unary (('*' | '/') unary)* ;  unary := '-' unary | atom
//! atom := NUMBER UNIT? | NAME | FN '(' NAME ',' DURATION ')' | '(' expr ')'
//! ```
//!
//! `and`, `or`, `not` may be spelled out. Times are in milliseconds: `rtt > 80`, `rtt > 80ms`
//! and `rtt > 0.08s` are the same; `%` divides by 100 (`loss > 5%`). FN is `avg`, `min` or
//! `max` of a variable over the last DURATION (`avg(rtt, 10s)`), over the samples in that
//! window *before* the current one, so `rtt > 10 * avg(rtt, 10s)` compares a sample with the
//! past it is not part of. A comparison is 1 or 0; an expression is true when non-zero.
//! Anything undefined (no RTT on a lost probe, an average over an empty window, 0/0) is NaN,
//! which makes every comparison false: evaluating never fails, so a running daemon never
//! stops on an expression.
//!
//! Variables ([`VARIABLES`]): what a [`Sample`] carries.

use std::collections::VecDeque;
use std::fmt;

/// The variables an expression may read, with their meaning (for `--help` and errors).
pub const VARIABLES: &[(&str, &str)] = &[
    ("rtt", "round-trip time of this probe, ms (NaN when it was lost)"),
    ("ri", "response interval: time since the previous reply, ms"),
    ("loss", "share of the probes of the last second that got no reply, 0..1"),
    ("event", "1 when a reconfiguration was detected at this sample, else 0"),
    ("confidence", "confidence of that reconfiguration, 0-100 (0 without one)"),
    ("srtt", "smoothed RTT, ms"),
    ("min_rtt", "windowed minimum RTT, ms"),
    ("capacity", "link capacity, Mbit/s (traces only; NaN in the daemon)"),
];

/// The window of the `loss` variable, ns: long enough to hold 100 probes at 10 ms.
pub const LOSS_WINDOW_NS: u64 = 1_000_000_000;

/// One measurement: the values of [`VARIABLES`] at time `t_ns` (any monotonic clock).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    pub t_ns: u64,
    pub rtt: f64,
    pub ri: f64,
    pub loss: f64,
    pub event: f64,
    pub confidence: f64,
    pub srtt: f64,
    pub min_rtt: f64,
    pub capacity: f64,
}

impl Sample {
    /// A sample at `t_ns` with every variable undefined (NaN) except `event` and `confidence`.
    pub fn at(t_ns: u64) -> Sample {
        let nan = f64::NAN;
        Sample { t_ns, rtt: nan, ri: nan, loss: nan, event: 0.0, confidence: 0.0, srtt: nan, min_rtt: nan, capacity: nan }
    }

    fn get(&self, var: Var) -> f64 {
        match var {
            Var::Rtt => self.rtt,
            Var::Ri => self.ri,
            Var::Loss => self.loss,
            Var::Event => self.event,
            Var::Confidence => self.confidence,
            Var::Srtt => self.srtt,
            Var::MinRtt => self.min_rtt,
            Var::Capacity => self.capacity,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Var {
    Rtt,
    Ri,
    Loss,
    Event,
    Confidence,
    Srtt,
    MinRtt,
    Capacity,
}

impl Var {
    const ALL: [Var; 8] = [Var::Rtt, Var::Ri, Var::Loss, Var::Event, Var::Confidence, Var::Srtt, Var::MinRtt, Var::Capacity];
    fn name(self) -> &'static str {
        VARIABLES[Var::ALL.iter().position(|v| *v == self).unwrap_or(0)].0
    }
    fn parse(s: &str) -> Option<Var> {
        VARIABLES.iter().position(|(n, _)| *n == s).map(|i| Var::ALL[i])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Agg {
    Avg,
    Min,
    Max,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Num(f64),
    Var(Var),
    /// Index into the expression's windows.
    Window(usize),
    Neg(Box<Node>),
    Not(Box<Node>),
    Bin(Op, Box<Node>, Box<Node>),
}

/// A parse error: what is wrong and the column (1-based, in characters) where.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub column: usize,
    pub message: String,
    source: String,
}

impl fmt::Display for ParseError {
    /// `column 7: expected ...`, then the expression with a caret under the column.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}\n  {}\n  {}^", self.column, self.message, self.source, " ".repeat(self.column - 1))
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64, String),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    End,
}

/// The tokens of `src` with their columns (0-based character offsets).
fn lex(src: &str) -> Result<Vec<(Tok, usize)>, (usize, String)> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let v: f64 = text.parse().map_err(|_| (start, format!("bad number '{text}'")))?;
            let ustart = i;
            while i < chars.len() && (chars[i].is_ascii_alphabetic() || chars[i] == '%') {
                i += 1;
            }
            out.push((Tok::Num(v, chars[ustart..i].iter().collect()), start));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push((
                match word.as_str() {
                    "and" => Tok::Op("&&"),
                    "or" => Tok::Op("||"),
                    "not" => Tok::Op("!"),
                    _ => Tok::Ident(word),
                },
                start,
            ));
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let op = ["<=", ">=", "==", "!=", "&&", "||"].into_iter().find(|o| *o == two);
        if let Some(o) = op {
            out.push((Tok::Op(o), start));
            i += 2;
            continue;
        }
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            ',' => Tok::Comma,
            '<' => Tok::Op("<"),
            '>' => Tok::Op(">"),
            '+' => Tok::Op("+"),
            '-' => Tok::Op("-"),
            '*' => Tok::Op("*"),
            '/' => Tok::Op("/"),
            '!' => Tok::Op("!"),
            '=' => return Err((start, "'=' is not an operator: compare with '=='".into())),
            _ => return Err((start, format!("unexpected character '{c}'"))),
        };
        out.push((tok, start));
        i += 1;
    }
    out.push((Tok::End, chars.len()));
    Ok(out)
}

/// The value of a number with its unit, in the language's units (ms, fractions).
fn with_unit(v: f64, unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "ms" => v,
        "s" => v * 1000.0,
        "us" => v / 1000.0,
        "%" => v / 100.0,
        _ => return None,
    })
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    windows: Vec<(Agg, Var, u64)>,
}

type PResult<T> = Result<T, (usize, String)>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    fn col(&self) -> usize {
        self.toks[self.pos].1
    }
    fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].0.clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn expect(&mut self, want: Tok, what: &str) -> PResult<()> {
        if *self.peek() == want {
            self.next();
            Ok(())
        } else {
            Err((self.col(), format!("expected {what}")))
        }
    }

    fn binary(&mut self, ops: &[(&str, Op)], sub: fn(&mut Parser) -> PResult<Node>, chain: bool) -> PResult<Node> {
        let mut lhs = sub(self)?;
        loop {
            let Tok::Op(o) = self.peek().clone() else { return Ok(lhs) };
            let Some(&(_, op)) = ops.iter().find(|(s, _)| *s == o) else { return Ok(lhs) };
            self.next();
            let rhs = sub(self)?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs));
            if !chain {
                if let Tok::Op(o2) = self.peek() {
                    if ops.iter().any(|(s, _)| s == o2) {
                        return Err((self.col(), "comparisons do not chain: use '&&' (a < b && b < c)".into()));
                    }
                }
                return Ok(lhs);
            }
        }
    }

    fn or(&mut self) -> PResult<Node> {
        self.binary(&[("||", Op::Or)], Parser::and, true)
    }
    fn and(&mut self) -> PResult<Node> {
        self.binary(&[("&&", Op::And)], Parser::not, true)
    }
    fn not(&mut self) -> PResult<Node> {
        if *self.peek() == Tok::Op("!") {
            self.next();
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> PResult<Node> {
        let ops = [("<", Op::Lt), ("<=", Op::Le), (">", Op::Gt), (">=", Op::Ge), ("==", Op::Eq), ("!=", Op::Ne)];
        self.binary(&ops, Parser::sum, false)
    }
    fn sum(&mut self) -> PResult<Node> {
        self.binary(&[("+", Op::Add), ("-", Op::Sub)], Parser::prod, true)
    }
    fn prod(&mut self) -> PResult<Node> {
        self.binary(&[("*", Op::Mul), ("/", Op::Div)], Parser::unary, true)
    }
    fn unary(&mut self) -> PResult<Node> {
        if *self.peek() == Tok::Op("-") {
            self.next();
            return Ok(Node::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }
    fn atom(&mut self) -> PResult<Node> {
        let col = self.col();
        match self.next() {
            Tok::Num(v, unit) => with_unit(v, &unit)
                .map(Node::Num)
                .ok_or_else(|| (col, format!("unknown unit '{unit}' (ms, s, us or %)"))),
            Tok::LParen => {
                let e = self.or()?;
                self.expect(Tok::RParen, "')'")?;
                Ok(e)
            }
            Tok::Ident(name) => {
                if *self.peek() == Tok::LParen {
                    return self.window(&name, col);
                }
                Var::parse(&name).map(Node::Var).ok_or_else(|| (col, unknown_name(&name)))
            }
            Tok::End => Err((col, "expression ends too early: expected a value".into())),
            t => Err((col, format!("expected a value, found {}", describe(&t)))),
        }
    }
    fn window(&mut self, name: &str, col: usize) -> PResult<Node> {
        let agg = match name {
            "avg" => Agg::Avg,
            "min" => Agg::Min,
            "max" => Agg::Max,
            _ => return Err((col, format!("unknown function '{name}' (avg, min, max)"))),
        };
        self.next();
        let vcol = self.col();
        let var = match self.next() {
            Tok::Ident(v) => Var::parse(&v).ok_or_else(|| (vcol, unknown_name(&v)))?,
            _ => return Err((vcol, format!("expected a variable: {name}(VARIABLE, DURATION)"))),
        };
        self.expect(Tok::Comma, &format!("',' then a duration: {name}({}, 10s)", var.name()))?;
        let dcol = self.col();
        let ms = match self.next() {
            Tok::Num(v, unit) if matches!(unit.as_str(), "ms" | "s" | "us" | "") => with_unit(v, &unit).unwrap_or(0.0),
            _ => return Err((dcol, "expected a duration such as 10s or 500ms".into())),
        };
        if ms <= 0.0 || ms > MAX_WINDOW_MS {
            return Err((dcol, format!("the window must be more than 0 and at most {} s", MAX_WINDOW_MS / 1000.0)));
        }
        self.expect(Tok::RParen, "')'")?;
        let w = (agg, var, (ms * 1e6) as u64);
        let idx = self.windows.iter().position(|x| *x == w).unwrap_or_else(|| {
            self.windows.push(w);
            self.windows.len() - 1
        });
        Ok(Node::Window(idx))
    }
}

/// The longest moving window, ms: an hour of 10 ms samples (360,000 values) is the memory
/// bound of one window.
const MAX_WINDOW_MS: f64 = 3_600_000.0;

fn unknown_name(n: &str) -> String {
    format!("unknown variable '{n}' (known: {})", VARIABLES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(v, u) => format!("the number {v}{u}"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Op(o) => format!("'{o}'"),
        Tok::LParen => "'('".into(),
        Tok::RParen => "')'".into(),
        Tok::Comma => "','".into(),
        Tok::End => "the end".into(),
    }
}

/// A parsed expression with the state of its moving windows.
#[derive(Clone, Debug)]
pub struct Expr {
    source: String,
    root: Node,
    /// (aggregate, variable, length ns) of each window the expression uses.
    windows: Vec<(Agg, Var, u64)>,
    /// The past samples of each window: (time ns, value), oldest first.
    history: Vec<VecDeque<(u64, f64)>>,
}

impl std::str::FromStr for Expr {
    type Err = ParseError;
    fn from_str(src: &str) -> Result<Expr, ParseError> {
        let err = |(col, message): (usize, String)| ParseError { column: col + 1, message, source: src.to_string() };
        let toks = lex(src).map_err(err)?;
        let mut p = Parser { toks, pos: 0, windows: Vec::new() };
        let root = p.or().map_err(err)?;
        if *p.peek() != Tok::End {
            let t = describe(p.peek());
            return Err(err((p.col(), format!("unexpected {t} after a complete expression"))));
        }
        let history = vec![VecDeque::new(); p.windows.len()];
        Ok(Expr { source: src.to_string(), root, windows: p.windows, history })
    }
}

/// The values an expression saw when it matched, for the command's environment.
pub type Matched = Vec<(String, f64)>;

impl Expr {
    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates the expression on `s` (its windows over the samples before it), then adds
    /// `s` to the windows. Returns the values it read when the expression is true.
    pub fn eval(&mut self, s: &Sample) -> Option<Matched> {
        for (i, (_, _, len)) in self.windows.iter().enumerate() {
            let h = &mut self.history[i];
            while h.front().is_some_and(|&(t, _)| t + len < s.t_ns) {
                h.pop_front();
            }
        }
        let win: Vec<f64> = (0..self.windows.len()).map(|i| self.window_value(i)).collect();
        let v = eval_node(&self.root, s, &win);
        for (i, (_, var, _)) in self.windows.iter().enumerate() {
            let x = s.get(*var);
            if !x.is_nan() {
                self.history[i].push_back((s.t_ns, x));
            }
        }
        (v != 0.0 && !v.is_nan()).then(|| self.matched(s, &win))
    }

    fn window_value(&self, i: usize) -> f64 {
        let h = &self.history[i];
        if h.is_empty() {
            return f64::NAN;
        }
        let vals = h.iter().map(|&(_, v)| v);
        match self.windows[i].0 {
            Agg::Avg => vals.sum::<f64>() / h.len() as f64,
            Agg::Min => vals.fold(f64::INFINITY, f64::min),
            Agg::Max => vals.fold(f64::NEG_INFINITY, f64::max),
        }
    }

    fn matched(&self, s: &Sample, win: &[f64]) -> Matched {
        let mut out: Matched = Var::ALL.iter().map(|v| (v.name().to_string(), s.get(*v))).collect();
        for (i, (agg, var, len)) in self.windows.iter().enumerate() {
            let agg = match agg {
                Agg::Avg => "avg",
                Agg::Min => "min",
                Agg::Max => "max",
            };
            out.push((format!("{agg}_{}_{}ms", var.name(), len / 1_000_000), win[i]));
        }
        out
    }
}

fn truth(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

fn eval_node(n: &Node, s: &Sample, win: &[f64]) -> f64 {
    match n {
        Node::Num(v) => *v,
        Node::Var(v) => s.get(*v),
        Node::Window(i) => win[*i],
        Node::Neg(a) => -eval_node(a, s, win),
        Node::Not(a) => {
            let v = eval_node(a, s, win);
            if v.is_nan() {
                f64::NAN
            } else {
                truth(v == 0.0)
            }
        }
        Node::Bin(op, a, b) => {
            let (x, y) = (eval_node(a, s, win), eval_node(b, s, win));
            // NaN compares false in IEEE arithmetic, which is what "undefined" should do.
            match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => x / y,
                Op::Lt => truth(x < y),
                Op::Le => truth(x <= y),
                Op::Gt => truth(x > y),
                Op::Ge => truth(x >= y),
                Op::Eq => truth(x == y),
                Op::Ne => truth(x != y && !x.is_nan() && !y.is_nan()),
                Op::And => truth(x != 0.0 && !x.is_nan() && y != 0.0 && !y.is_nan()),
                Op::Or => truth((x != 0.0 && !x.is_nan()) || (y != 0.0 && !y.is_nan())),
            }
        }
    }
}

/// The environment variable a matched value is passed in: `LEOCC_RTT`, `LEOCC_AVG_RTT_10000MS`.
pub fn env_name(value_name: &str) -> String {
    format!("LEOCC_{}", value_name.to_ascii_uppercase())
}

/// A trigger: an expression and at most one firing per `min_gap_ns`.
#[derive(Clone, Debug)]
pub struct Trigger {
    pub expr: Expr,
    /// Rate limit: no firing closer than this to the previous one, ns.
    pub min_gap_ns: u64,
    last_fire_ns: Option<u64>,
}

/// The default rate limit of `--trigger`: one firing per 10 s, the seed's measurement window,
/// so a condition that stays true runs the command once per window, not per probe.
pub const DEFAULT_MIN_GAP_NS: u64 = 10_000_000_000;

impl Trigger {
    /// A trigger of `expr` with the rate limit `min_gap_ns`.
    pub fn new(expr: Expr, min_gap_ns: u64) -> Trigger {
        Trigger { expr, min_gap_ns, last_fire_ns: None }
    }

    /// Feeds a sample; Some when the trigger fires (the expression is true and the last firing
    /// is at least `min_gap_ns` ago).
    pub fn on_sample(&mut self, s: &Sample) -> Option<Matched> {
        let m = self.expr.eval(s)?;
        if self.last_fire_ns.is_some_and(|t| s.t_ns < t + self.min_gap_ns) {
            return None;
        }
        self.last_fire_ns = Some(s.t_ns);
        Some(m)
    }
}

/// Turns the daemon's sends and replies into [`Sample`]s: the response interval and the loss
/// over [`LOSS_WINDOW_NS`] need the stream's recent past.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    sends: VecDeque<u64>,
    replies: VecDeque<u64>,
    last_reply_ns: Option<u64>,
}

impl Stream {
    /// A probe left at `t_ns`.
    pub fn on_send(&mut self, t_ns: u64) {
        self.sends.push_back(t_ns);
    }

    /// A reply arrived at `t_ns` for a probe sent at `t_ns - rtt`; returns the sample with
    /// `rtt`, `ri` and `loss` filled in (the caller adds the detector's values).
    pub fn on_reply(&mut self, t_ns: u64, rtt_ns: Option<u64>) -> Sample {
        let mut s = Sample::at(t_ns);
        s.rtt = rtt_ns.map_or(f64::NAN, |r| r as f64 / 1e6);
        s.ri = self.last_reply_ns.map_or(f64::NAN, |l| t_ns.saturating_sub(l) as f64 / 1e6);
        self.last_reply_ns = Some(t_ns);
        if let Some(r) = rtt_ns {
            self.replies.push_back(t_ns.saturating_sub(r));
        }
        // Probes sent in the window that ends one RTT-ish ago (a probe sent just now cannot
        // have been answered yet): those older than 2 x the RTT.
        let grace = rtt_ns.unwrap_or(0).saturating_mul(2);
        let end = t_ns.saturating_sub(grace);
        let start = end.saturating_sub(LOSS_WINDOW_NS);
        while self.sends.front().is_some_and(|&t| t < start) {
            self.sends.pop_front();
        }
        while self.replies.front().is_some_and(|&t| t < start) {
            self.replies.pop_front();
        }
        let sent = self.sends.iter().filter(|&&t| t <= end).count();
        let answered = self.replies.iter().filter(|&&t| t <= end).count();
        s.loss = if sent == 0 { f64::NAN } else { (1.0 - answered as f64 / sent as f64).max(0.0) };
        s
    }
}

/// At most this many commands of one trigger run at once: a firing while they all still run
/// is skipped (and logged), so a slow command (a traceroute) cannot pile up processes.
pub const MAX_RUNNING: usize = 4;

/// A trigger with its command: `leocc probe --trigger EXPR --exec CMD`.
#[derive(Debug)]
pub struct Action {
    pub trigger: Trigger,
    /// Run with `sh -c`, the matched values in its environment ([`env_name`]) plus
    /// `LEOCC_TRIGGER` (the expression).
    pub command: String,
    running: Vec<std::process::Child>,
}

/// What a firing did.
#[derive(Debug)]
pub struct Fired {
    /// The values the expression read.
    pub values: Matched,
    /// The command's pid, or why it did not start.
    pub outcome: Result<u32, String>,
}

impl Action {
    /// A trigger that runs `command`.
    pub fn new(trigger: Trigger, command: String) -> Action {
        Action { trigger, command, running: Vec::new() }
    }

    /// Feeds a sample; when the trigger fires, starts the command (never waiting for it).
    pub fn trigger_sample(&mut self, s: &Sample) -> Option<Fired> {
        self.running.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        let values = self.trigger.on_sample(s)?;
        if self.running.len() >= MAX_RUNNING {
            return Some(Fired { values, outcome: Err(format!("skipped: {MAX_RUNNING} earlier runs still running")) });
        }
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(&self.command).stdin(std::process::Stdio::null());
        cmd.env("LEOCC_TRIGGER", self.trigger.expr.source());
        for (n, v) in &values {
            cmd.env(env_name(n), if v.is_nan() { String::new() } else { format!("{v}") });
        }
        // The command dies with the daemon (no process outlives the command that started it).
        // SAFETY: prctl is async-signal-safe and touches only the child's own state.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let outcome = match cmd.spawn() {
            Ok(c) => {
                let pid = c.id();
                self.running.push(c);
                Ok(pid)
            }
            Err(e) => Err(format!("could not start sh: {e}")),
        };
        Some(Fired { values, outcome })
    }
}

impl Drop for Action {
    fn drop(&mut self) {
        for c in &mut self.running {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The actions of `--trigger EXPR --exec CMD` pairs (in order), each rate-limited to one
/// firing per `min_gap_s`. A bad expression is an error here, before the daemon starts.
pub fn actions(exprs: &[String], commands: &[String], min_gap_s: f64) -> Result<Vec<Action>, String> {
    if exprs.len() != commands.len() {
        return Err(format!("{} --trigger but {} --exec: give one --exec CMD per --trigger EXPR", exprs.len(), commands.len()));
    }
    if !(min_gap_s.is_finite() && min_gap_s >= 0.0) {
        return Err(format!("--trigger-every must be a non-negative number of seconds (got {min_gap_s})"));
    }
    exprs
        .iter()
        .zip(commands)
        .map(|(x, c)| {
            let expr: Expr = x.parse().map_err(|e| format!("--trigger '{x}': {e}"))?;
            Ok(Action::new(Trigger::new(expr, (min_gap_s * 1e9) as u64), c.clone()))
        })
        .collect()
}

/// The names every expression may use, for error messages and help: variables and functions.
pub fn help() -> String {
    let mut s = String::from("variables:\n");
    for (n, d) in VARIABLES {
        s.push_str(&format!("  {n:<11} {d}\n"));
    }
    s.push_str("functions: avg(VAR, DURATION), min(...), max(...) over the samples before this one\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Expr {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn sample(t_ms: u64, rtt: f64) -> Sample {
        Sample { rtt, ..Sample::at(t_ms * 1_000_000) }
    }

    #[test]
    fn arithmetic_units_and_precedence() {
        let s = Sample { loss: 0.06, ..sample(0, 40.0) };
        for (src, want) in [
            ("rtt > 30", true),
            ("rtt > 0.05s", false),
            ("rtt == 40ms", true),
            ("1 + 2 * 3 == 7", true),
            ("(1 + 2) * 3 == 9", true),
            ("-rtt < 0 && loss > 5%", true),
            ("not (rtt > 30) or loss > 10%", false),
            ("!(event == 1)", true),
            ("rtt / 0 > 1", true),
            ("0 / 0 > 1 || 0 / 0 <= 1", false),
        ] {
            assert_eq!(e(src).eval(&s).is_some(), want, "{src}");
        }
        // A lost probe's RTT is undefined: no comparison with it holds.
        let lost = sample(0, f64::NAN);
        assert!(e("rtt > 0").eval(&lost).is_none() && e("rtt <= 0").eval(&lost).is_none() && e("rtt != 1").eval(&lost).is_none());
    }

    #[test]
    fn parse_errors_point_at_the_column() {
        for (src, col, what) in [
            ("rtt > ", 7, "ends too early"),
            ("rtt >> 3", 6, "expected a value"),
            ("rt > 3", 1, "unknown variable 'rt'"),
            ("avg(rtt 10s)", 9, "','"),
            ("avg(rtt, 10x)", 10, "duration"),
            ("median(rtt, 1s)", 1, "unknown function"),
            ("rtt = 3", 5, "'=='"),
            ("1 < rtt < 3", 9, "do not chain"),
            ("rtt > 3 )", 9, "unexpected ')'"),
            ("rtt > 3 # x", 9, "unexpected character '#'"),
            ("(rtt > 3", 9, "')'"),
            ("rtt > 3kb", 7, "unknown unit 'kb'"),
            ("avg(rtt, 0s) > 1", 10, "more than 0"),
        ] {
            let err = src.parse::<Expr>().unwrap_err();
            assert_eq!(err.column, col, "{src}: {err}");
            assert!(err.message.contains(what), "{src}: {err}");
            let shown = err.to_string();
            let caret = shown.lines().last().unwrap();
            assert_eq!(caret.len() - 2, col, "{shown}");
        }
    }

    #[test]
    fn moving_average_covers_the_past_window_only() {
        // The seed's trigger: latency above 10 x its moving average.
        let mut x = e("rtt > 10 * avg(rtt, 100ms)");
        for t in 0..20 {
            assert!(x.eval(&sample(t * 10, 30.0)).is_none());
        }
        let m = x.eval(&sample(200, 400.0)).expect("fires at the spike");
        let avg = m.iter().find(|(n, _)| n == "avg_rtt_100ms").unwrap().1;
        assert_eq!(avg, 30.0, "the spike itself is not in its own average");
        assert_eq!(m.iter().find(|(n, _)| n == "rtt").unwrap().1, 400.0);
        // The window holds the samples of the last 100 ms: ten at 30 ms and the 400 ms one.
        let m = e("max(rtt, 1s) > 0").eval(&sample(0, 1.0));
        assert!(m.is_none(), "an empty window is undefined");
        assert!(x.eval(&sample(210, 300.0)).is_none(), "the average now includes the spike");
        for t in 22..40 {
            x.eval(&sample(t * 10, 30.0));
        }
        assert!(x.eval(&sample(400, 400.0)).is_some(), "the spike left the 100 ms window");
        assert_eq!(env_name("avg_rtt_100ms"), "LEOCC_AVG_RTT_100MS");
    }

    #[test]
    fn rate_limit_spaces_firings() {
        let mut t = Trigger::new(e("rtt > 50"), 1_000_000_000);
        let fired: Vec<u64> = (0..300).filter(|i| t.on_sample(&sample(i * 10, 60.0)).is_some()).collect();
        assert_eq!(fired, vec![0, 100, 200], "once per second while the condition holds");
    }

    #[test]
    fn stream_measures_ri_and_loss() {
        let mut st = Stream::default();
        let ms = 1_000_000;
        let mut last = Sample::at(0);
        // 10 ms probes, 20 ms RTT, every fourth lost.
        for i in 0..200u64 {
            st.on_send(i * 10 * ms);
            if i % 4 != 3 {
                last = st.on_reply(i * 10 * ms + 20 * ms, Some(20 * ms));
            }
        }
        assert_eq!(last.rtt, 20.0);
        assert_eq!(last.ri, 10.0);
        assert!((last.loss - 0.25).abs() < 0.03, "{}", last.loss);
        // The last reply came at 2000 ms (probe 198; 199 was lost); after an outage, 2150 ms.
        st.on_send(2130 * ms);
        let s = st.on_reply(2150 * ms, Some(20 * ms));
        assert_eq!(s.ri, 150.0);
        assert!(help().contains("confidence"));
    }

    #[test]
    fn action_runs_the_command_with_the_matched_values() {
        let dir = std::env::temp_dir().join(format!("leocc-trigger-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("env");
        let cmd = format!("echo \"$LEOCC_TRIGGER|$LEOCC_RTT|$LEOCC_AVG_RTT_100MS|$LEOCC_EVENT\" > {}", out.display());
        let mut a = Action::new(Trigger::new(e("rtt > 2 * avg(rtt, 100ms)"), 0), cmd);
        assert!(a.trigger_sample(&sample(0, 10.0)).is_none());
        let f = a.trigger_sample(&sample(10, 25.0)).expect("fires on the sample that makes it true");
        assert!(f.outcome.is_ok(), "{:?}", f.outcome);
        for c in &mut a.running {
            c.wait().unwrap();
        }
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "rtt > 2 * avg(rtt, 100ms)|25|10|0\n");
        // A command that cannot run is reported, and the next sample is still evaluated.
        let mut bad = Action::new(Trigger::new(e("rtt > 0"), 0), "exit 3".into());
        assert!(bad.trigger_sample(&sample(0, 1.0)).unwrap().outcome.is_ok());
        assert!(bad.trigger_sample(&sample(10, 1.0)).is_some());
        let err = actions(&["rtt >".into()], &["true".into()], 1.0).unwrap_err();
        assert!(err.starts_with("--trigger 'rtt >': column 6"), "{err}");
        assert!(actions(&["rtt > 1".into()], &[], 1.0).unwrap_err().contains("one --exec"));
        assert_eq!(actions(&["rtt > 1".into()], &["true".into()], 2.5).unwrap()[0].trigger.min_gap_ns, 2_500_000_000);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
