//! The integration tests of `toolreg-code`, as one test program: programs
//! run in the real worker process. Tests that need a process of their own
//! (a secret in its environment, a resumption elsewhere) run this program
//! again as a child, with `--exact` and the test's path.

mod escape;
mod hostile_worker;
mod run;
mod support;
mod suspend;
