//! Running a task: the call round by round (parked while it waits for its
//! client's answers), its heartbeat, the outcome it writes, and the sweep
//! of ended tasks past their TTL.

use super::*;

impl Tasks {
    /// Remove the ended tasks past their TTL among the next [`SWEEP_KEYS`]
    /// keys (a task still running is left to its runner, and to `tasks/get`),
    /// and the parts left of a task whose record is gone (forgotten after
    /// its TTL while its runner, maybe on another replica, still wrote).
    pub(super) async fn sweep(&self) {
        let ns = &self.options.namespace;
        let from = self.sweep_from.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let page = match ns.list("task/", SWEEP_KEYS, from.as_deref()).await {
            Ok(page) => page,
            Err(error) => {
                tracing::debug!(%error, "task sweep skipped");
                return;
            }
        };
        *self.sweep_from.lock().unwrap_or_else(PoisonError::into_inner) = page.next_cursor;
        let now = now_ms();
        for entry in page.entries {
            let Some(id) = entry.key.strip_prefix("task/") else { continue };
            // A part (`task/<id>/<part>`) whose record is gone goes too.
            if let Some((record, _part)) = id.split_once('/').filter(|(record, _)| is_task_id(record)) {
                if let Err(StoreError::NotFound { .. }) = ns.reference(&key(record, "")).await {
                    let _ = ns.delete(&entry.key).await;
                }
                continue;
            }
            // The records themselves (`task/<id>`), old enough.
            if !is_task_id(id) {
                continue;
            }
            if now.saturating_sub(entry.created_ms) <= i64::try_from(millis(self.options.ttl)).unwrap_or(i64::MAX) {
                continue;
            }
            let Ok(stored) = ns.get(&entry.key).await else { continue };
            let Ok(created) = serde_json::from_value::<Created>(stored.value) else { continue };
            let expired = now.saturating_sub(created.created_ms) > i64::try_from(created.ttl_ms).unwrap_or(i64::MAX);
            if expired && ns.reference(&key(id, "end")).await.is_ok() {
                for part in ["beat", "end", "ask", "answers", ""] {
                    let _ = ns.delete(&key(id, part)).await;
                }
            }
        }
    }

    pub(super) fn beat(&self, message: Option<String>) -> Beat {
        Beat { at: rmcp::task_manager::current_timestamp(), at_ms: now_ms(), owner: self.process.clone(), message }
    }

    /// Run the call to its end (round by round when it asks questions),
    /// beating all along, and write its outcome.
    pub(super) async fn run(
        &self,
        id: &str,
        started: Started,
        cancel: CancellationToken,
        message: Arc<Mutex<Option<String>>>,
        answered: Arc<Notify>,
    ) {
        let beating = CancellationToken::new();
        let heart = self.heartbeat(id, cancel.clone(), Arc::clone(&message), beating.clone());
        let work = self.rounds(id, started, &cancel, &message, &answered);
        let (end, ()) = tokio::join!(
            async {
                let end = work.await;
                beating.cancel();
                end
            },
            heart
        );
        let ns = &self.options.namespace;
        // The first outcome written stands: a cancellation (or a poller that
        // gave this runner up) may have come first.
        match ns.create(&key(id, "end"), &json!(end)).await {
            Ok(_) | Err(StoreError::Exists { .. }) => {}
            Err(error) => {
                // The result cannot be kept: say so, smaller.
                tracing::warn!(task = id, %error, "task outcome not stored");
                let failed = End {
                    status: TaskStatus::Failed,
                    at: rmcp::task_manager::current_timestamp(),
                    message: None,
                    result: None,
                    error: Some(rpc_error(-32603, format!("the task's outcome could not be stored: {error}"))),
                };
                let _ = ns.create(&key(id, "end"), &json!(failed)).await;
            }
        }
        // Heartbeats and questions are of no use once it ended.
        for part in ["beat", "ask", "answers"] {
            let _ = ns.delete(&key(id, part)).await;
        }
        // A task forgotten after its TTL while it ran keeps no outcome.
        if let Err(StoreError::NotFound { .. }) = ns.reference(&key(id, "")).await {
            let _ = ns.delete(&key(id, "end")).await;
        }
    }

    /// Write the heartbeat every interval until `stop`; cancel the call when
    /// an outcome (a cancellation) appears in the store, or when the task
    /// was forgotten (its TTL ran out, which any replica may act on).
    async fn heartbeat(
        &self,
        id: &str,
        cancel: CancellationToken,
        message: Arc<Mutex<Option<String>>>,
        stop: CancellationToken,
    ) {
        let ns = &self.options.namespace;
        // The store keeps every version of a key: a beat is written when the
        // message changed, and otherwise a few times per lease (enough for
        // a poller to see the runner alive), not at every tick.
        let mut written: (Option<String>, tokio::time::Instant) = (None, tokio::time::Instant::now());
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(self.options.heartbeat) => {}
            }
            let now = message.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if now != written.0 || written.1.elapsed() >= self.options.lease / 4 {
                match ns.set(&key(id, "beat"), &json!(self.beat(now.clone()))).await {
                    Ok(_) => written = (now, tokio::time::Instant::now()),
                    Err(error) => tracing::warn!(task = id, %error, "task heartbeat not stored"),
                }
            }
            let forgotten = matches!(ns.reference(&key(id, "")).await, Err(StoreError::NotFound { .. }));
            if forgotten || ns.reference(&key(id, "end")).await.is_ok() {
                cancel.cancel();
            }
        }
    }

    /// The call, round after round while it asks its client questions.
    async fn rounds(
        &self,
        id: &str,
        started: Started,
        cancel: &CancellationToken,
        message: &Arc<Mutex<Option<String>>>,
        answered: &Notify,
    ) -> End {
        let Started { engine, tool, arguments, extensions, principal, capabilities, owner: _ } = started;
        // The task id is the call id: unique, and what the audit trail shows.
        let call = ToolCall::new(id, tool, arguments);
        let mut responses = InputResponses::new();
        let mut state = None;
        let mut saved = BTreeMap::new();
        let reporter = {
            let message = Arc::clone(message);
            ProgressReporter::new(move |progress| {
                let text = match (progress.total, progress.message) {
                    (Some(total), Some(text)) => format!("{}/{total}: {text}", progress.progress),
                    (None, Some(text)) => format!("{}: {text}", progress.progress),
                    (Some(total), None) => format!("{}/{total}", progress.progress),
                    (None, None) => format!("{}", progress.progress),
                };
                *message.lock().unwrap_or_else(PoisonError::into_inner) = Some(text);
            })
        };
        for round_number in 1u64.. {
            let mut round_extensions = extensions.clone();
            round_extensions.insert(reporter.clone());
            // Whatever the client's revision, a task asks its questions the
            // extension's way (`input_required`, answered by `tasks/update`):
            // the request that started it may be long gone.
            let round = Arc::new(InputRound::new(responses.clone(), state.clone(), capabilities.clone()));
            let checkpoints = Arc::new(Checkpoints::restoring(std::mem::take(&mut saved)));
            round_extensions.insert_arc(Arc::clone(&round));
            round_extensions.insert_arc(Arc::clone(&checkpoints));
            let mut options = CallOptions::new().cancel(cancel.clone()).extensions(round_extensions);
            options.principal = principal.clone();
            let result = engine.execute_call(call.clone(), options).await;
            if cancel.is_cancelled() {
                return self.ended(TaskStatus::Cancelled, None, None);
            }
            let Some((requests, next_state)) = round.take_asked() else {
                return self.outcome(&result);
            };
            saved = checkpoints.take_saved();
            state = Some(next_state);
            match self.wait_for_answers(id, round_number, requests, cancel, answered).await {
                Some(answers) => responses = answers,
                None => return self.ended(TaskStatus::Cancelled, None, None),
            }
        }
        self.ended(TaskStatus::Failed, None, Some(rpc_error(-32603, "too many rounds".to_owned())))
    }

    pub(super) fn ended(&self, status: TaskStatus, result: Option<JsonObject>, error: Option<JsonObject>) -> End {
        End { status, at: rmcp::task_manager::current_timestamp(), message: None, result, error }
    }

    /// The outcome of a finished call: its result (a tool's own error
    /// included, as `isError`), or failed for what is not the tool's answer
    /// (a panic, a result that cannot be sent or kept).
    fn outcome(&self, result: &toolreg::ToolResult) -> End {
        if let Err(ToolError::Panicked { .. }) = &result.outcome {
            let message = result.outcome.as_ref().err().map(ToString::to_string).unwrap_or_default();
            return self.ended(TaskStatus::Failed, None, Some(rpc_error(-32603, message)));
        }
        if let Err(ToolError::Cancelled) = &result.outcome {
            return self.ended(TaskStatus::Cancelled, None, None);
        }
        let rendered: Result<CallToolResult, ErrorData> = to_call_tool_result(result);
        let value = rendered.and_then(|r| {
            serde_json::to_value(r).map_err(|e| ErrorData::internal_error(format!("unwritable result: {e}"), None))
        });
        match value {
            Ok(value) => {
                let size = serde_json::to_vec(&value).map(|v| v.len()).unwrap_or(usize::MAX);
                if size > self.options.max_result_bytes {
                    let message = format!(
                        "the result of `{}` is {size} bytes, over this server's task limit of {} bytes",
                        result.name, self.options.max_result_bytes
                    );
                    return self.ended(
                        TaskStatus::Failed,
                        None,
                        Some(rpc_error(crate::oversize::TOO_LARGE as i32, message)),
                    );
                }
                self.ended(TaskStatus::Completed, Some(object(value)), None)
            }
            Err(error) => {
                let error = object(serde_json::to_value(&error).unwrap_or_default());
                self.ended(TaskStatus::Failed, None, Some(error))
            }
        }
    }

    /// Park the task on `requests` until every one has an answer (`None`:
    /// cancelled while waiting).
    async fn wait_for_answers(
        &self,
        id: &str,
        round: u64,
        requests: InputRequests,
        cancel: &CancellationToken,
        answered: &Notify,
    ) -> Option<InputResponses> {
        let ns = &self.options.namespace;
        let keys: Vec<String> = requests.keys().cloned().collect();
        let _ = ns.delete(&key(id, "answers")).await;
        if let Err(error) = ns.set(&key(id, "ask"), &json!(Ask { round, requests })).await {
            tracing::warn!(task = id, %error, "task questions not stored");
        }
        // Answers from this process wake it at once; from another replica,
        // they are found at the next look.
        let look = self.options.heartbeat.min(Duration::from_millis(250));
        loop {
            if let Ok(stored) = ns.get(&key(id, "answers")).await
                && let Ok(answers) = serde_json::from_value::<Answers>(stored.value)
                && answers.round == round
                && keys.iter().all(|k| answers.responses.contains_key(k))
            {
                let _ = ns.delete(&key(id, "ask")).await;
                return Some(answers.responses);
            }
            tokio::select! {
                () = cancel.cancelled() => return None,
                () = answered.notified() => {}
                () = tokio::time::sleep(look) => {}
            }
        }
    }
}
