//! The congestion controls the project knows: one list, [`CONTROLS`], that the simulator, the
//! evaluation (both engines, the report's colours, LEOTP's TCP baselines) and the QUIC stack
//! read. A control's name is the same everywhere; what differs is which engines have it and
//! where its parameters are declared.
//!
//! Adding a control: a row here, then its implementation in each engine the row names
//! (docs/architecture.md, "A new congestion control"). The engines' tests check that every
//! row they are named in really runs there.

/// Where a control runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The packet-level simulator (`leocc sim`, `leocc eval --engine sim`).
    Sim,
    /// Linux TCP through the emulator (`leocc eval --engine emu`): the name is the
    /// `tcp_congestion_control` one (LeoCC's once `leocc kernel load` has run).
    Kernel,
    /// The QUIC stack (`leocc quic`, `quic:NAME` flows in `leocc eval --engine emu`).
    Quic,
}

/// Where a control's settable parameters are declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    /// It has none.
    None,
    /// The simulator's own specs (`crates/leocc-sim/src/cc/param.rs`), simulator only.
    Sim,
    /// LeoCC's one table, `LEOCC_PARAMS` in core/leocc.h, in every engine that runs it
    /// (`--param leocc.NAME=V` in the simulator, `leocc kernel params --set` in the kernel).
    Core,
}

/// One congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Control {
    /// Its name in every command (`--cc NAME`, `--flows NAME@...`).
    pub name: &'static str,
    /// Whether the simulator has it.
    pub sim: bool,
    /// Whether Linux here has it (the kernel's own, or LeoCC's BPF struct_ops).
    pub kernel: bool,
    /// The QUIC stack's name for it (quinn's NewReno is `newreno`), if QUIC has it.
    pub quic: Option<&'static str>,
    /// Where its parameters are declared.
    pub params: Params,
    /// One line for listings.
    pub doc: &'static str,
}

/// LeoCC fed the trace's true reconfigurations instead of the detector's (simulator only).
pub const ORACLE_LEOCC: &str = "leocc-oracle";

const fn row(
    name: &'static str,
    sim: bool,
    kernel: bool,
    quic: Option<&'static str>,
    params: Params,
    doc: &'static str,
) -> Control {
    Control {
        name,
        sim,
        kernel,
        quic,
        params,
        doc,
    }
}

/// Every control, in the order charts colour them (so a control has one colour everywhere).
#[rustfmt::skip]
pub const CONTROLS: &[Control] = &[
    row("leocc", true, true, Some("leocc"), Params::Core, "LeoCC (core/leocc.c)"),
    row("cubic", true, true, Some("cubic"), Params::Sim, "CUBIC (RFC 9438)"),
    row("bbr", true, true, Some("bbr"), Params::Sim, "BBRv1 (Linux tcp_bbr.c)"),
    row("bbr3", true, false, None, Params::Sim, "BBRv3"),
    row("copa", true, false, None, Params::None, "Copa (NSDI 2018)"),
    row("vivace", true, false, None, Params::None, "PCC Vivace (NSDI 2018)"),
    row("reno", true, true, Some("newreno"), Params::None, "Reno (NewReno in QUIC)"),
    row("vegas", true, false, None, Params::None, "TCP Vegas"),
    row("satcp", true, false, None, Params::None, "SaTCP: CUBIC that freezes its state across handovers"),
    row("leocc-ref", true, false, None, Params::None, "the LeoCC authors' kernel module, rebuilt"),
    row(ORACLE_LEOCC, true, false, None, Params::Core, "LeoCC fed the trace's true reconfigurations"),
];

impl Control {
    /// Whether `engine` has this control.
    pub fn runs_in(&self, engine: Engine) -> bool {
        match engine {
            Engine::Sim => self.sim,
            Engine::Kernel => self.kernel,
            Engine::Quic => self.quic.is_some(),
        }
    }
}

/// The control called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Control> {
    CONTROLS.iter().find(|c| c.name == name)
}

/// The names of the controls `engine` has, in [`CONTROLS`]' order.
pub fn names(engine: Engine) -> Vec<&'static str> {
    CONTROLS
        .iter()
        .filter(|c| c.runs_in(engine))
        .map(|c| c.name)
        .collect()
}

/// Whether `engine` has a control called `name`.
pub fn runs_in(engine: Engine, name: &str) -> bool {
    find(name).is_some_and(|c| c.runs_in(engine))
}

/// The position of `name` in [`CONTROLS`] (the colour order), if it is a control.
pub fn position(name: &str) -> Option<usize> {
    CONTROLS.iter().position(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_control_runs_somewhere() {
        for (i, c) in CONTROLS.iter().enumerate() {
            assert!(
                CONTROLS[..i].iter().all(|d| d.name != c.name),
                "{} twice",
                c.name
            );
            assert!(
                c.sim || c.kernel || c.quic.is_some(),
                "{} runs nowhere",
                c.name
            );
        }
    }

    #[test]
    fn engines_list_their_controls() {
        assert_eq!(names(Engine::Kernel), ["leocc", "cubic", "bbr", "reno"]);
        assert_eq!(names(Engine::Quic), ["leocc", "cubic", "bbr", "reno"]);
        assert!(runs_in(Engine::Sim, ORACLE_LEOCC));
        assert!(!runs_in(Engine::Kernel, "bbr3"));
        assert!(!runs_in(Engine::Sim, "nosuch"));
        assert_eq!(find("reno").and_then(|c| c.quic), Some("newreno"));
    }
}
