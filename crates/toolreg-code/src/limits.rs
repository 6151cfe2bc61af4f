//! [`Limits`]: what one program may use. Each limit, when reached, ends the
//! program with its own [`CodeError`](crate::CodeError) the model can read.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What one program may use.
///
/// The defaults suit a model's short programs: a few seconds of
/// interpreter time, 64 MiB of JavaScript heap, 200 tool calls and 64 KiB
/// of printed output.
///
/// ```
/// use std::time::Duration;
/// use toolreg_code::Limits;
///
/// let limits = Limits { time: Duration::from_secs(2), max_calls: 20, ..Limits::default() };
/// assert_eq!(limits.max_calls, 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The interpreter's running time, measured by the host (the worker is
    /// killed past it). Time spent waiting for tool calls is not counted:
    /// those have the engine's own timeouts.
    #[serde(with = "millis")]
    pub time: Duration,
    /// Interpreter steps (about 10,000 bytecode instructions each: QuickJS
    /// checks its interrupt handler that often).
    pub max_steps: u64,
    /// The JavaScript heap, in bytes; the worker process's address space is
    /// capped a margin above it as well.
    pub memory_bytes: usize,
    /// The interpreter's stack, in bytes: what bounds recursion depth.
    pub stack_bytes: usize,
    /// Text printed with `console.log` and friends, in bytes.
    pub output_bytes: usize,
    /// Tool calls the program may make in all.
    pub max_calls: usize,
    /// The program's source, in bytes.
    pub program_bytes: usize,
    /// One message between host and worker (a batch of calls, a batch of
    /// results, the program's result), in bytes.
    pub message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(10),
            max_steps: 100_000,
            memory_bytes: 64 << 20,
            stack_bytes: 512 << 10,
            output_bytes: 64 << 10,
            max_calls: 200,
            program_bytes: 64 << 10,
            message_bytes: 16 << 20,
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
