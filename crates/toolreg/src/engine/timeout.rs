//! The per-call time limit, around the hooks and the run together (the
//! approval is outside it: a person deciding is not the tool being slow).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::exec::{CallContext, ToolError};
use crate::handler::ToolFuture;

/// Run `rest` (the layers and the tool) within `limit`, if there is one.
/// The call gets a token of its own, cancelled when the limit passes, so
/// that work the tool started stops too; the call then answers
/// [`ToolError::Timeout`].
pub(crate) fn within(
    limit: Option<Duration>,
    cx: CallContext,
    rest: impl FnOnce(CallContext) -> ToolFuture,
) -> ToolFuture {
    let Some(limit) = limit else {
        return rest(cx);
    };
    let own = cx.cancellation().map_or_else(CancellationToken::new, CancellationToken::child_token);
    let running = rest(cx.with_cancellation(own.clone()));
    ToolFuture::new(async move {
        match tokio::time::timeout(limit, running).await {
            Ok(outcome) => outcome,
            Err(_) => {
                own.cancel();
                Err(ToolError::Timeout { limit })
            }
        }
    })
}
