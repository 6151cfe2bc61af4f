//! A call's progress reports, sent to the client in order and all before
//! the call's answer.

use rmcp::model::ProgressNotificationParam;
use rmcp::service::{Peer, RoleServer};
use toolreg::ProgressReporter;

/// Sends a call's progress to the client in order, each report before the
/// call's answer and none after it (the specification ends progress with
/// the request). Reports queue for one task that sends them; a tool that
/// reports faster than the client reads loses the reports past the queue's
/// bound (progress is best effort, memory is bounded).
pub(super) struct ProgressSender {
    queue: tokio::sync::mpsc::Sender<ProgressMessage>,
    token: rmcp::model::ProgressToken,
}

enum ProgressMessage {
    Report(ProgressNotificationParam),
    /// Everything before this was sent: say so and stop.
    Finish(tokio::sync::oneshot::Sender<()>),
}

/// Reports queued per call before further ones are dropped.
const PROGRESS_QUEUE: usize = 64;

impl ProgressSender {
    pub(super) fn start(token: rmcp::model::ProgressToken, peer: Peer<RoleServer>) -> ProgressSender {
        let (queue, mut reports) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
        tokio::spawn(async move {
            while let Some(message) = reports.recv().await {
                match message {
                    // A client that went away misses it.
                    ProgressMessage::Report(param) => {
                        let _ = peer.notify_progress(param).await;
                    }
                    ProgressMessage::Finish(done) => {
                        let _ = done.send(());
                        return;
                    }
                }
            }
        });
        ProgressSender { queue, token }
    }

    /// The reporter the tool's context gets.
    pub(super) fn reporter(&self) -> ProgressReporter {
        let queue = self.queue.clone();
        let token = self.token.clone();
        ProgressReporter::new(move |progress| {
            let mut param = ProgressNotificationParam::new(token.clone(), progress.progress);
            param.total = progress.total;
            param.message = progress.message;
            // Full: dropped (see above); closed: the call has answered.
            let _ = queue.try_send(ProgressMessage::Report(param));
        })
    }

    /// Wait until every report made so far was sent; later ones are dropped.
    pub(super) async fn finish(self) {
        let (done, sent) = tokio::sync::oneshot::channel();
        if self.queue.send(ProgressMessage::Finish(done)).await.is_ok() {
            let _ = sent.await;
        }
    }
}
