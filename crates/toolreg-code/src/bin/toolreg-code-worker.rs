//! The worker process of `toolreg-code`: runs one program in QuickJS for
//! the host that started it (see `toolreg_code::worker`).

fn main() -> std::process::ExitCode {
    toolreg_code::worker::serve()
}
