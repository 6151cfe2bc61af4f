//! The record of a program's calls, kept when the program stops at a call
//! that waits for an approval, and sealed so the host can trust it later.
//!
//! A program stopped mid-way is resumed by running it again from the start
//! and answering each call it makes, in order, from the record: the
//! sandbox has no clock, randomness or other input, so the program makes
//! the same calls with the same arguments and reaches the call it stopped
//! at. Each recorded call is checked (same tool, same arguments hash) and
//! never run again; a call that differs ends the run with
//! [`CodeError::ReplayDiverged`], having run nothing.
//!
//! The record travels with the suspended run, through whatever store the
//! host uses, so it is sealed with an HMAC-SHA-256 under a key only the
//! host holds, over the call's id, the program's hash and the record's
//! exact text: a changed record, a record moved to another call, or one
//! replayed against a changed program is refused
//! ([`CodeError::StateRejected`]) before anything runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolreg::policy::ArgumentsHash;
use toolreg::seal::SealingKey;

use crate::CodeError;
use crate::protocol::Answer;

/// The calls a program made, by their number in the program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Journal {
    pub(crate) calls: BTreeMap<u64, Entry>,
    /// What the program printed before it stopped: for the person asked to
    /// approve the call it stopped at (a resumed run prints it again).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) printed: String,
}

/// One recorded call and what the program was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) tool: String,
    /// [`ArgumentsHash`] of the arguments, hex.
    pub(crate) hash: String,
    pub(crate) answer: Answer,
}

impl Entry {
    pub(crate) fn new(tool: &str, args: &Value, answer: Answer) -> Self {
        Entry { tool: tool.to_owned(), hash: ArgumentsHash::of(args).to_string(), answer }
    }

    /// The recorded answer, if `tool` with `args` is the call recorded as
    /// number `number`; the divergence otherwise.
    pub(crate) fn replay(&self, number: u64, tool: &str, args: &Value) -> Result<Answer, CodeError> {
        let hash = ArgumentsHash::of(args).to_string();
        if self.tool == tool && self.hash == hash {
            return Ok(self.answer.clone());
        }
        Err(CodeError::ReplayDiverged {
            call: number,
            expected: format!("{} (arguments {})", self.tool, short(&self.hash)),
            found: format!("{tool} (arguments {})", short(&hash)),
        })
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// A journal as stored: its exact text and the seal over it.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// `toolreg-code/1`: the format.
    format: String,
    journal: String,
    mac: String,
}

const FORMAT: &str = "toolreg-code/1";

/// What the seal covers: the format, the call, the program, the record.
fn parts<'a>(call_id: &'a str, program_hash: &'a [u8], journal: &'a str) -> [&'a [u8]; 4] {
    [FORMAT.as_bytes(), call_id.as_bytes(), program_hash, journal.as_bytes()]
}

impl Journal {
    /// The journal sealed for the call `call_id` running `program`.
    pub(crate) fn seal(&self, key: &SealingKey, call_id: &str, program: &str) -> Value {
        let journal = serde_json::to_string(self).unwrap_or_else(|_| unreachable!("a journal is plain JSON"));
        let mac = key.seal(&parts(call_id, &Sha256::digest(program.as_bytes()), &journal));
        serde_json::to_value(Sealed { format: FORMAT.to_owned(), journal, mac })
            .unwrap_or_else(|_| unreachable!("strings serialise"))
    }

    /// The journal in `sealed`, if it was sealed with `key` for this call
    /// and this program.
    pub(crate) fn open(sealed: Value, key: &SealingKey, call_id: &str, program: &str) -> Result<Journal, CodeError> {
        let rejected = |reason: &str| CodeError::StateRejected { reason: reason.to_owned() };
        let sealed: Sealed = serde_json::from_value(sealed).map_err(|_| rejected("it is not a saved program state"))?;
        if sealed.format != FORMAT {
            return Err(rejected("it was saved in another format"));
        }
        if !key.verify(&parts(call_id, &Sha256::digest(program.as_bytes()), &sealed.journal), &sealed.mac) {
            return Err(rejected(
                "its seal does not match: the record or the program changed, it belongs to another call, or it was \
                 sealed with another key",
            ));
        }
        serde_json::from_str(&sealed.journal).map_err(|_| rejected("its record does not parse"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn journal() -> Journal {
        let mut journal = Journal::default();
        journal.calls.insert(1, Entry::new("read", &json!({"path": "a"}), Answer::Ok(json!("text"))));
        journal
    }

    #[test]
    fn a_sealed_journal_opens_with_the_same_key_call_and_program() {
        let key = SealingKey::new([7; 32]);
        let sealed = journal().seal(&key, "c1", "return 1");
        assert_eq!(Journal::open(sealed, &key, "c1", "return 1").unwrap(), journal());
    }

    #[test]
    fn any_change_is_refused() {
        let key = SealingKey::new([7; 32]);
        let sealed = journal().seal(&key, "c1", "return 1");
        let refused = |r: Result<Journal, CodeError>| assert!(matches!(r, Err(CodeError::StateRejected { .. })));
        refused(Journal::open(sealed.clone(), &SealingKey::new([8; 32]), "c1", "return 1"));
        refused(Journal::open(sealed.clone(), &key, "c2", "return 1"));
        refused(Journal::open(sealed.clone(), &key, "c1", "return 2"));
        let mut changed = sealed.clone();
        let text = changed["journal"].as_str().unwrap().replace("text", "lies");
        changed["journal"] = json!(text);
        refused(Journal::open(changed, &key, "c1", "return 1"));
        refused(Journal::open(json!({"format": FORMAT, "journal": "{}", "mac": "zz"}), &key, "c1", "return 1"));
        refused(Journal::open(json!(42), &key, "c1", "return 1"));
    }

    #[test]
    fn replay_checks_tool_and_arguments() {
        let entry = Entry::new("read", &json!({"path": "a"}), Answer::Ok(json!("text")));
        assert_eq!(entry.replay(1, "read", &json!({"path": "a"})).unwrap(), Answer::Ok(json!("text")));
        assert!(matches!(
            entry.replay(1, "read", &json!({"path": "b"})),
            Err(CodeError::ReplayDiverged { call: 1, .. })
        ));
        assert!(matches!(entry.replay(1, "write", &json!({"path": "a"})), Err(CodeError::ReplayDiverged { .. })));
    }
}
