//! [`SealingKey`]: the host's secret for sealing state it hands out and takes back
//! later — a suspended run kept in a shared store, a program's record of
//! calls — so that what comes back is exactly what it sealed.
//!
//! A seal is an HMAC-SHA-256 over the parts given, each length-prefixed (no
//! two different lists of parts share a seal). Hosts that resume each
//! other's work hold the same key.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A 32-byte secret that seals and checks state (see the [module](self)).
///
/// ```
/// use toolreg::seal::SealingKey;
///
/// let key = SealingKey::new([7; 32]);
/// let tag = key.seal(&[b"run-1", b"{\"steps\":3}"]);
/// assert!(key.verify(&[b"run-1", b"{\"steps\":3}"], &tag));
/// assert!(!key.verify(&[b"run-1", b"{\"steps\":4}"], &tag));
/// assert!(!SealingKey::new([8; 32]).verify(&[b"run-1", b"{\"steps\":3}"], &tag));
/// assert_eq!(SealingKey::from_hex(&"07".repeat(32)).unwrap().seal(&[b"x"]), key.seal(&[b"x"]));
/// ```
#[derive(Clone)]
pub struct SealingKey([u8; 32]);

impl SealingKey {
    /// A key from 32 secret bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        SealingKey(bytes)
    }

    /// A fresh random key from the operating system.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        // The OS random source does not fail on the systems we run on; if it
        // ever did, say so loudly rather than fail every seal.
        if let Err(error) = getrandom::fill(&mut bytes) {
            tracing::error!(%error, "no random key: state sealed with it is not secret; give the host a key");
        }
        SealingKey(bytes)
    }

    /// A key from 64 hex digits (as kept in an environment variable or file).
    pub fn from_hex(text: &str) -> Option<Self> {
        let text = text.trim();
        let bytes = decode_hex(text)?;
        bytes.try_into().ok().map(SealingKey)
    }

    /// The key as 64 hex digits, to keep it.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// The seal of `parts`, as 64 hex digits.
    pub fn seal(&self, parts: &[&[u8]]) -> String {
        hex(&self.mac(parts).finalize().into_bytes())
    }

    /// Whether `tag` is the seal of `parts` under this key (compared in
    /// constant time).
    pub fn verify(&self, parts: &[&[u8]], tag: &str) -> bool {
        decode_hex(tag).is_some_and(|tag| self.mac(parts).verify_slice(&tag).is_ok())
    }

    fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        // HMAC takes a key of any length, so this cannot fail.
        let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(&self.0) else { unreachable!("HMAC takes any key") };
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealingKey(…)")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok())).collect()
}
