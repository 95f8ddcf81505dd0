//! `leocc testbed ...`: the LEOScope-like testbed (python/leocc_testbed, docs/testbed.md). Its
//! scheduler and executor is Ray, whose API is Python, so this replaces itself with
//! `PYTHON -m leocc_testbed ARGS` (the project's .venv, or $LEOCC_PYTHON), telling it where this
//! binary is: the experiments a node runs are this binary's subcommands.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::os::unix::process::CommandExt;
use std::process::Command;

#[derive(Args)]
#[command(disable_help_flag = true)]
pub struct TestbedArgs {
    /// node | serve | submit | check | cancel | status | results, and their options
    /// (`leocc testbed --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    args: Vec<String>,
}

pub fn run(a: TestbedArgs) -> Result<()> {
    let python = leocc_eval::ray::default_python();
    let probe = Command::new(&python)
        .args(["-c", "import leocc_testbed"])
        .output()
        .with_context(|| format!("leocc testbed: cannot run Python {}", python.display()))?;
    if !probe.status.success() {
        bail!(
            "leocc testbed: Python {} has no leocc_testbed ({}); scripts/setup.sh --python installs it into .venv, or name another Python with $LEOCC_PYTHON",
            python.display(),
            String::from_utf8_lossy(&probe.stderr).lines().last().unwrap_or("").trim()
        );
    }
    let exe = std::env::current_exe().context("leocc testbed: where is this binary")?;
    let err = Command::new(&python).args(["-m", "leocc_testbed"]).args(&a.args).env("LEOCC_BIN", exe).exec();
    Err(err).with_context(|| format!("leocc testbed: running {} -m leocc_testbed", python.display()))
}
