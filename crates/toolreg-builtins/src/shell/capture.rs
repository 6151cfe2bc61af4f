//! A command's output, read as it comes: the first and last bytes of each
//! stream kept, the middle counted and dropped, so memory stays bounded
//! whatever the command prints.

/// How long the output pipes may stay open after the group was killed (a
/// process that left the group with `setsid` can hold them).
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The first `half` bytes and the last `half` bytes of a stream, and its length.
#[derive(Default)]
pub(super) struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

/// A capture in progress, shared with [`drain`] so that what was read is kept
/// even when the stream never ends (a process outside the command's reach
/// holds the pipe open).
pub(super) type Capture = Arc<std::sync::Mutex<Captured>>;

fn lock(capture: &Capture) -> std::sync::MutexGuard<'_, Captured> {
    // Only byte copies run under this lock; a poisoned capture is still whole.
    capture.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) async fn capture(stream: Option<impl AsyncRead + Unpin>, half: usize, into: Capture) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut out = lock(&into);
        out.total += n as u64;
        let mut chunk = &buf[..n];
        let room = half.saturating_sub(out.head.len());
        if room > 0 {
            let take = room.min(chunk.len());
            out.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= half {
            out.tail.clear();
            out.tail.extend(&chunk[chunk.len() - half..]);
        } else {
            let overflow = (out.tail.len() + chunk.len()).saturating_sub(half);
            out.tail.drain(..overflow);
            out.tail.extend(chunk);
        }
    }
}

/// Wait briefly for a capture to finish, then render what it read, with the
/// bytes dropped; a stream still open after the grace keeps its bytes so far.
pub(super) async fn drain(task: tokio::task::JoinHandle<()>, capture: Capture) -> (String, u64) {
    let abort = task.abort_handle();
    if tokio::time::timeout(DRAIN_GRACE, task).await.is_err() {
        abort.abort();
    }
    let mut captured = std::mem::take(&mut *lock(&capture));
    let kept = captured.head.len() + captured.tail.len();
    let dropped = captured.total - kept as u64;
    let mut text = String::from_utf8_lossy(&captured.head).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n… [{dropped} bytes dropped] …\n"));
    }
    text.push_str(&String::from_utf8_lossy(captured.tail.make_contiguous()));
    (text, dropped)
}
