//! [`Quotas`]: each principal's calls a minute and calls at once, counted
//! in this process, so that one noisy principal is refused while the others
//! keep working.
//!
//! Calls a minute are a token bucket per principal (a full minute's worth
//! at first, refilled evenly), which answers a refusal with when the next
//! call would pass. Memory is bounded: at most [`MAX_TRACKED`] principals
//! are counted, and a principal whose bucket is full and who has no call
//! running is forgotten first (losing nothing: it would start full again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::access::Quota;

/// The most principals counted at once.
pub const MAX_TRACKED: usize = 100_000;

/// The counters of every principal (cheap to clone: shared).
#[derive(Debug, Clone, Default)]
pub struct Quotas {
    counters: Arc<Mutex<HashMap<String, Counter>>>,
}

#[derive(Debug)]
struct Counter {
    /// Calls that may start now (fractional: refilled continuously).
    tokens: f64,
    refilled: Instant,
    running: u32,
    /// The principal's calls a minute when last admitted.
    per_minute: Option<u32>,
}

/// Why a call was not admitted, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaRefusal {
    /// Which limit, in words.
    pub reason: String,
    /// When a call would pass (none for calls at once: when one ends).
    pub retry_after: Option<Duration>,
}

/// A call admitted under a concurrency limit: the place is given back when
/// it is dropped.
#[derive(Debug)]
pub(crate) struct Admitted {
    counters: Arc<Mutex<HashMap<String, Counter>>>,
    who: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(counter) = counters.get_mut(&self.who) {
            counter.running = counter.running.saturating_sub(1);
        }
    }
}

impl Quotas {
    /// Admit one call of the principal `who` (its identity) under `quota`,
    /// or say why not.
    pub(crate) fn admit(&self, who: &str, quota: Quota) -> Result<Option<Admitted>, QuotaRefusal> {
        if quota == Quota::default() {
            return Ok(None);
        }
        let now = Instant::now();
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if !counters.contains_key(who) && counters.len() >= MAX_TRACKED {
            counters.retain(|_, c| c.running > 0 || !c.is_full(now));
        }
        let counter = counters.entry(who.to_owned()).or_insert_with(|| Counter {
            tokens: quota.calls_per_minute.map_or(0.0, f64::from),
            refilled: now,
            running: 0,
            per_minute: quota.calls_per_minute,
        });
        counter.per_minute = quota.calls_per_minute;
        if let Some(per_minute) = quota.calls_per_minute {
            let capacity = f64::from(per_minute);
            let rate = capacity / 60.0;
            counter.tokens = (counter.tokens + now.duration_since(counter.refilled).as_secs_f64() * rate).min(capacity);
            counter.refilled = now;
            if counter.tokens < 1.0 {
                let wait = if rate > 0.0 { (1.0 - counter.tokens) / rate } else { 60.0 };
                return Err(QuotaRefusal {
                    reason: format!("the limit of {per_minute} calls a minute is reached"),
                    retry_after: Some(Duration::from_secs_f64(wait.max(0.001)).max(Duration::from_secs(1))),
                });
            }
        }
        if let Some(at_once) = quota.concurrent_calls
            && counter.running >= at_once
        {
            return Err(QuotaRefusal {
                reason: format!("{at_once} calls are already running, the limit at once"),
                retry_after: None,
            });
        }
        if quota.calls_per_minute.is_some() {
            counter.tokens -= 1.0;
        }
        if quota.concurrent_calls.is_none() {
            return Ok(None);
        }
        counter.running += 1;
        Ok(Some(Admitted { counters: Arc::clone(&self.counters), who: who.to_owned() }))
    }

    /// How many principals are counted now.
    pub fn tracked(&self) -> usize {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl Counter {
    fn is_full(&self, now: Instant) -> bool {
        match self.per_minute {
            None => true,
            Some(per_minute) => {
                let rate = f64::from(per_minute) / 60.0;
                self.tokens + now.duration_since(self.refilled).as_secs_f64() * rate >= f64::from(per_minute)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE_A_MINUTE: Quota = Quota { calls_per_minute: Some(3), concurrent_calls: None };

    #[test]
    fn a_principal_past_its_calls_a_minute_waits_and_others_do_not() {
        let quotas = Quotas::default();
        for _ in 0..3 {
            quotas.admit("noisy", THREE_A_MINUTE).unwrap();
        }
        let refused = quotas.admit("noisy", THREE_A_MINUTE).unwrap_err();
        assert!(refused.reason.contains("3 calls a minute"), "{refused:?}");
        let wait = refused.retry_after.unwrap();
        assert!(wait > Duration::from_secs(15) && wait <= Duration::from_secs(20), "{wait:?}");
        assert!(quotas.admit("quiet", THREE_A_MINUTE).is_ok());
    }

    #[test]
    fn calls_at_once_are_given_back_when_they_end() {
        let quotas = Quotas::default();
        let one = Quota { calls_per_minute: None, concurrent_calls: Some(1) };
        let running = quotas.admit("a", one).unwrap();
        assert!(quotas.admit("a", one).unwrap_err().retry_after.is_none());
        assert!(quotas.admit("b", one).is_ok());
        drop(running);
        assert!(quotas.admit("a", one).is_ok());
    }

    #[test]
    fn idle_principals_are_forgotten_past_the_bound() {
        let quotas = Quotas::default();
        let generous = Quota { calls_per_minute: Some(u32::MAX / 2), concurrent_calls: None };
        {
            let mut counters = quotas.counters.lock().unwrap();
            for i in 0..MAX_TRACKED {
                let full = Counter { tokens: 1e12, refilled: Instant::now(), running: 0, per_minute: Some(60) };
                counters.insert(i.to_string(), full);
            }
        }
        quotas.admit("newcomer", generous).unwrap();
        assert!(quotas.tracked() < MAX_TRACKED, "{}", quotas.tracked());
    }
}
