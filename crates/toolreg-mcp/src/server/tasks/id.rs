//! What a task id is: 128 random bits as lowercase hex, refused before the
//! store is asked when it has another form.

use rmcp::model::ErrorData;

/// The length of a task id: 32 lowercase hex characters (128 random bits).
pub const TASK_ID_LEN: usize = 32;

/// Whether `id` has the form of a task id this server hands out.
pub fn is_task_id(id: &str) -> bool {
    id.len() == TASK_ID_LEN && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `bytes` random bytes as hex (at most 32: a fresh key's worth).
pub(super) fn random_hex(bytes: usize) -> String {
    let mut hex = toolreg::seal::SealingKey::random().to_hex();
    hex.truncate(bytes * 2);
    hex
}

/// Refuse an id that is not one this server hands out, before the store is
/// asked (the id is quoted only up to its first 64 characters).
pub(super) fn check_id(id: &str) -> Result<(), ErrorData> {
    if is_task_id(id) {
        return Ok(());
    }
    let shown: String = id.chars().take(64).collect();
    Err(ErrorData::invalid_params(
        format!("invalid task id `{shown}`: a task id is {TASK_ID_LEN} lowercase hex characters"),
        None,
    ))
}
