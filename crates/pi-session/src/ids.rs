//! Identifiers: 8-hex entry ids, UUIDv4 and time-ordered UUIDv7 session ids.
//!
//! Ids must be unique, not secret, so a SplitMix64 sequence seeded once from the OS (and the
//! process's hash keys, time and pid as a fallback) is enough and keeps the crate free of an RNG
//! dependency.

use crate::error::SessionError;
use std::hash::{BuildHasher, RandomState};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

static SEED: OnceLock<u64> = OnceLock::new();
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn seed() -> u64 {
    *SEED.get_or_init(|| {
        let mut bytes = [0u8; 8];
        let from_os = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .is_ok();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let keyed = RandomState::new().hash_one((nanos, std::process::id()));
        if from_os {
            u64::from_le_bytes(bytes) ^ keyed
        } else {
            keyed
        }
    })
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniformly distributed random `u64`.
pub fn random_u64() -> u64 {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    mix(seed().wrapping_add(n.wrapping_add(1).wrapping_mul(GAMMA)))
}

fn random_bytes() -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&random_u64().to_le_bytes());
    b[8..].copy_from_slice(&random_u64().to_le_bytes());
    b
}

fn hex_uuid(b: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{byte:02x}"));
    }
    s
}

/// A random (version 4) UUID, lowercase.
pub fn uuid_v4() -> String {
    let mut b = random_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    hex_uuid(&b)
}

/// Generator state of [`uuid_v7`]: the last timestamp used and a counter that keeps ids created
/// in the same millisecond (or after the clock stepped back) in increasing order.
struct V7State {
    last_ms: u64,
    sequence: Option<u64>,
}

static V7: Mutex<V7State> = Mutex::new(V7State {
    last_ms: 0,
    sequence: None,
});

/// A time-ordered (version 7) UUID: 48 bits of Unix milliseconds, then a 42-bit counter that
/// starts at a random value and increases with every id, then random bits.
pub fn uuid_v7() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut b = random_bytes();
    let (ms, seq) = {
        let mut st = V7.lock().unwrap_or_else(|e| e.into_inner());
        let ms = now.max(st.last_ms);
        st.last_ms = ms;
        let seq = match st.sequence {
            // Starts below 2^40 so the 42-bit counter cannot realistically run out.
            None => random_u64() >> 24,
            Some(s) => (s + 1) & ((1 << 42) - 1),
        };
        st.sequence = Some(seq);
        (ms, seq)
    };
    for (i, byte) in b.iter_mut().take(6).enumerate() {
        *byte = (ms >> ((5 - i) * 8)) as u8;
    }
    b[6] = 0x70 | ((seq >> 37) & 0x0f) as u8;
    b[7] = (seq >> 29) as u8;
    b[8] = 0x80 | ((seq >> 23) & 0x3f) as u8;
    b[9] = (seq >> 15) as u8;
    b[10] = (seq >> 7) as u8;
    b[11] = (((seq & 0x7f) as u8) << 1) | (b[11] & 1);
    hex_uuid(&b)
}

/// A fresh entry id: 8 lowercase hex digits, re-drawn while `taken` says it is in use; after 100
/// collisions a full UUID is used, as Pi does.
pub fn new_entry_id(taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = format!("{:08x}", random_u64() >> 32);
        if !taken(&id) {
            return id;
        }
    }
    uuid_v4()
}

/// [`new_entry_id`] against the keys of an id index.
pub(crate) fn new_entry_id_in(index: &crate::id_index::IdIndex) -> String {
    new_entry_id(|id| index.contains_key(id))
}

/// Checks an explicit session id (`--session-id`): alphanumeric at both ends, `.`, `_`, `-`
/// allowed inside.
pub fn validate_session_id(id: &str) -> Result<(), SessionError> {
    let b = id.as_bytes();
    let inner_ok = b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
    let ends_ok = matches!((b.first(), b.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric());
    if inner_ok && ends_ok {
        Ok(())
    } else {
        Err(SessionError::InvalidSessionId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn entry_ids_are_8_hex_and_skip_taken_ones() {
        let id = new_entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(
            id.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(new_entry_id(|_| true).len(), 36);
        let ids: HashSet<String> = (0..10_000).map(|_| new_entry_id(|_| false)).collect();
        assert!(ids.len() > 9_980);
    }

    #[test]
    fn uuids_have_version_and_variant_and_v7_is_ordered() {
        let v4 = uuid_v4();
        assert_eq!(v4.len(), 36);
        assert_eq!(&v4[14..15], "4");
        assert!("89ab".contains(&v4[19..20]));
        let a: Vec<String> = (0..1000).map(|_| uuid_v7()).collect();
        for w in a.windows(2) {
            assert!(w[0] < w[1], "{} !< {}", w[0], w[1]);
        }
        assert_eq!(&a[0][14..15], "7");
        assert!("89ab".contains(&a[0][19..20]));
    }

    #[test]
    fn session_id_validation() {
        for ok in [
            "a",
            "abc",
            "a.b-c_d",
            "01a22a0e-b9e4-70cc-962d-dbb1142b465d",
        ] {
            assert!(validate_session_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", ".", "a b", "a/b", "é"] {
            assert!(validate_session_id(bad).is_err(), "{bad}");
        }
    }
}
