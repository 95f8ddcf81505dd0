//! `leocc testbed ...`: the LEOScope-like testbed (python/leocc_testbed, docs/testbed.md). Its
//! scheduler and executor is Ray, whose API is Python, so this replaces itself with
//! `PYTHON -m leocc_testbed ARGS` (the project's .venv, or $LEOCC_PYTHON), telling it where this
//! binary is: the experiments a node runs are this binary's subcommands.

use anyhow::{Context, Result};
use clap::Args;
use std::os::unix::process::CommandExt;
use std::process::Command;

#[derive(Args)]
#[command(disable_help_flag = true)]
pub struct TestbedArgs {
    /// head | node | submit | check | cancel | serve | status | results | bench, and their
    /// options (`leocc testbed --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    args: Vec<String>,
}

/// Runs the package's command line, or says how to get the package: one Python start, not a
/// probe and then the real one.
const BOOTSTRAP: &str = "import sys
try:
    from leocc_testbed.cli import main
except ImportError as e:
    sys.exit(f'leocc testbed: Python {sys.executable} has no leocc_testbed ({e}); scripts/setup.sh --python installs it into .venv, or name another Python with $LEOCC_PYTHON')
sys.argv[0] = 'leocc testbed'
sys.exit(main())";

pub fn run(a: TestbedArgs) -> Result<()> {
    let python = leocc_eval::ray::default_python();
    let exe = std::env::current_exe().context("leocc testbed: where is this binary")?;
    let err = Command::new(&python).args(["-c", BOOTSTRAP]).args(&a.args).env("LEOCC_BIN", exe).exec();
    Err(err).with_context(|| format!("leocc testbed: cannot run Python {}", python.display()))
}
