//! The code-mode worker for the `code_mode` bench and its test: a program
//! of `toolreg-code` runs in this process (see `toolreg_code::worker`).

fn main() -> std::process::ExitCode {
    toolreg_code::worker::serve()
}
