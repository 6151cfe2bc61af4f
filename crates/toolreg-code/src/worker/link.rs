//! The worker's end of the conversation with its host: one JSON message a
//! line each way (see `protocol`), every line read within the size limit,
//! and a final message made to fit it.

use std::io::{self, BufRead, Read, Write};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::CodeError;
use crate::protocol::{FromWorker, ProgramCall, ToWorker};

pub(super) fn fit(answer: FromWorker, limit: usize) -> FromWorker {
    let size = |m: &FromWorker| serde_json::to_vec(m).map_or(usize::MAX, |v| v.len());
    let bytes = size(&answer);
    if bytes <= limit {
        return answer;
    }
    let (error, output) = match answer {
        FromWorker::Done { output, .. } => {
            let message = format!(
                "with what it printed it is {bytes} bytes, more than the limit of {limit} for one message: return \
                 less (or print less)"
            );
            (CodeError::BadResult { message }, output)
        }
        FromWorker::Failed { error, output } => (shorten(error), output),
        calls @ FromWorker::Calls { .. } => return calls,
    };
    let failed = FromWorker::Failed { error: error.clone(), output };
    if size(&failed) <= limit {
        return failed;
    }
    FromWorker::Failed { error, output: String::new() }
}

/// How much of an error's text is kept when the whole would not fit in
/// a message (a program can throw a string of megabytes).
const ERROR_CHARS: usize = 4096;

fn shorten(error: CodeError) -> CodeError {
    let cut = |message: String| toolreg::engine::truncate_middle(&message, ERROR_CHARS).into_owned();
    match error {
        CodeError::Exception { message } => CodeError::Exception { message: cut(message) },
        CodeError::Syntax { message } => CodeError::Syntax { message: cut(message) },
        CodeError::BadResult { message } => CodeError::BadResult { message: cut(message) },
        CodeError::Sandbox { message } => CodeError::Sandbox { message: cut(message) },
        other => other,
    }
}

/// The worker's end of the conversation.
pub(super) struct Link<'a, R, W> {
    pub(super) input: &'a mut R,
    pub(super) output: &'a mut W,
    pub(super) limit: usize,
}

impl<R: BufRead, W: Write> Link<'_, R, W> {
    /// Send the program's calls; wait for their results.
    /// `printed` is what the program printed since the last exchange.
    pub(super) fn exchange(&mut self, calls: Vec<ProgramCall>, printed: String) -> io::Result<Vec<Settled>> {
        write_message(self.output, &FromWorker::Calls { calls, printed })?;
        let line = read_line(self.input, self.limit)?;
        let answers: Answers<'_> =
            serde_json::from_slice(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if answers.kind != "results" {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "expected results"));
        }
        Ok(answers.results.into_iter().map(Settled::from).collect())
    }
}

/// A `results` message (see `protocol`) as the worker reads it: each value
/// left as its JSON text, for the program's own `JSON.parse`. Parsing them
/// into `Value`s here would stop at serde_json's nesting limit (128
/// levels) and fail the whole program over one deep result; the
/// interpreter's parser is bounded by its stack instead, and a result too
/// deep for it fails only its own call (see `settle` in the prelude).
#[derive(Deserialize)]
struct Answers<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    results: Vec<RawReply<'a>>,
}

#[derive(Deserialize)]
struct RawReply<'a> {
    id: u64,
    /// The value (absent for a failed call; `null` reads as absent too).
    #[serde(borrow, default)]
    ok: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Value>,
}

/// One answer, as `settle` takes it: the call's id, whether it succeeded,
/// and the JSON text of its value or of its `{kind, message}`.
pub(super) struct Settled {
    pub(super) id: u64,
    pub(super) ok: bool,
    pub(super) payload: String,
}

impl From<RawReply<'_>> for Settled {
    fn from(reply: RawReply<'_>) -> Self {
        match (reply.ok, reply.error) {
            (_, Some(error)) => Settled { id: reply.id, ok: false, payload: error.to_string() },
            (Some(value), None) => Settled { id: reply.id, ok: true, payload: value.get().to_owned() },
            (None, None) => Settled { id: reply.id, ok: true, payload: "null".to_owned() },
        }
    }
}

pub(super) fn read_message(input: &mut impl BufRead, limit: usize) -> io::Result<ToWorker> {
    let line = read_line(input, limit)?;
    serde_json::from_slice(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn read_line(input: &mut impl BufRead, limit: usize) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let read = Read::take(&mut *input, u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_until(b'\n', &mut line)?;
    if read == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the host closed the conversation"));
    }
    if line.len() > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "a message from the host is over the size limit"));
    }
    Ok(line)
}

pub(super) fn write_message(output: &mut impl Write, message: &FromWorker) -> io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    output.write_all(&line)?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(line: &str) -> Vec<(u64, bool, String)> {
        let answers: Answers<'_> = serde_json::from_str(line).unwrap();
        assert_eq!(answers.kind, "results");
        answers.results.into_iter().map(Settled::from).map(|s| (s.id, s.ok, s.payload)).collect()
    }

    #[test]
    fn results_reach_the_program_as_their_json_text() {
        let deep = format!("{}0{}", "[".repeat(300), "]".repeat(300));
        let line = format!(
            r#"{{"type":"results","results":[{{"id":1,"ok":{{"a": [1, 2]}}}},{{"id":2,"ok":null}},{{"id":3,"error":{{"kind":"denied","message":"no"}}}},{{"id":4,"ok":{deep}}}]}}"#
        );
        assert_eq!(
            answers(&line),
            [
                (1, true, r#"{"a": [1, 2]}"#.to_owned()),
                (2, true, "null".to_owned()),
                (3, false, r#"{"kind":"denied","message":"no"}"#.to_owned()),
                (4, true, deep),
            ]
        );
    }

    #[test]
    fn a_final_message_past_the_limit_is_made_to_fit() {
        let done = FromWorker::Done { value: Value::String("x".repeat(1000)), output: "printed".into() };
        let FromWorker::Failed { error: CodeError::BadResult { message }, output } = fit(done, 300) else {
            panic!("not refused")
        };
        assert!(message.contains("more than the limit of 300"), "{message}");
        assert_eq!(output, "printed");
        let thrown = FromWorker::Failed {
            error: CodeError::Exception { message: "y".repeat(20_000) },
            output: "z".repeat(20_000),
        };
        let FromWorker::Failed { error: CodeError::Exception { message }, output } = fit(thrown, 10_000) else {
            panic!("changed kind")
        };
        assert!(message.contains("characters removed") && message.len() < 5_000, "{}", message.len());
        assert!(output.is_empty());
    }
}
