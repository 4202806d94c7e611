//! AWS event-stream framing (`application/vnd.amazon.eventstream`): each message is a prelude
//! (total length, headers length, CRC32 of both), typed headers, a payload and a CRC32 of the
//! whole message. Bytes arrive in arbitrary chunks; complete messages come out.

/// One decoded message: its string headers (`:event-type`, `:message-type`, ...) and payload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Message {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Incremental decoder. Like the AWS SDK, it reads a message's total length, waits for that
/// many bytes and only then checks the message; so a stream of bytes that are no frames (a
/// proxy's keep-alive comments) reads as one long message that never completes, as in Pi.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// A message too long to hold: the bytes still to come before it fails, and the text.
    skipping: Option<(usize, String)>,
}

const PRELUDE: usize = 12;
/// Messages larger than this are not held (the service's limit is 16 MiB): their bytes are
/// counted instead and the message fails when they are all in, as it would in the SDK.
const MAX_MESSAGE: usize = 24 * 1024 * 1024;

impl Decoder {
    /// Appends `chunk`; returns the messages it completes, or the framing error.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Message>, String> {
        if let Some((left, text)) = &mut self.skipping {
            if chunk.len() >= *left {
                return Err(std::mem::take(text));
            }
            *left -= chunk.len();
            return Ok(Vec::new());
        }
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut at = 0;
        while self.buf.len() - at >= 4 {
            let b = &self.buf[at..];
            let total = be32(&b[0..4]) as usize;
            if total > MAX_MESSAGE {
                if b.len() < PRELUDE {
                    break;
                }
                let text = prelude_error(b)
                    .unwrap_or_else(|| format!("Invalid event-stream message length: {total}"));
                if b.len() >= total {
                    return Err(text);
                }
                self.skipping = Some((total - b.len(), text));
                self.buf.clear();
                return Ok(out);
            }
            if b.len() < total.max(4) {
                break;
            }
            let msg = &b[..total.max(4)];
            if total < PRELUDE + 4 {
                return Err(
                    "Provided message too short to accommodate event stream message overhead"
                        .into(),
                );
            }
            if let Some(text) = prelude_error(msg) {
                return Err(text);
            }
            let expected = be32(&msg[total - 4..]);
            let actual = crc32(&msg[..total - 4]);
            if actual != expected {
                return Err(format!(
                    "The message checksum ({actual}) did not match the expected value of {expected}"
                ));
            }
            let headers_len = be32(&msg[4..8]) as usize;
            let headers = msg
                .get(PRELUDE..PRELUDE + headers_len)
                .filter(|_| PRELUDE + headers_len <= total - 4)
                .ok_or_else(|| "Invalid event-stream header".to_string())
                .and_then(parse_headers)?;
            out.push(Message {
                headers,
                payload: msg[PRELUDE + headers_len..total - 4].to_vec(),
            });
            at += total;
        }
        self.buf.drain(..at);
        Ok(out)
    }

    /// True when bytes of an unfinished message are buffered.
    pub fn pending(&self) -> bool {
        !self.buf.is_empty() || self.skipping.is_some()
    }
}

/// The SDK's text when the prelude's own checksum is wrong (`b` holds at least the prelude).
fn prelude_error(b: &[u8]) -> Option<String> {
    let expected = be32(&b[8..12]);
    let actual = crc32(&b[0..8]);
    (actual != expected).then(|| {
        format!(
            "The prelude checksum specified in the message ({expected}) does not match the calculated CRC32 checksum ({actual})"
        )
    })
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Header values of every type are read; only strings are kept (the others carry nothing
/// the adapter needs).
fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, String)>, String> {
    let bad = || "Invalid event-stream header".to_string();
    let mut out = Vec::new();
    while !b.is_empty() {
        let name_len = *b.first().ok_or_else(bad)? as usize;
        let name = b.get(1..1 + name_len).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(name).into_owned();
        b = &b[1 + name_len..];
        let kind = *b.first().ok_or_else(bad)?;
        b = &b[1..];
        let fixed = match kind {
            0 | 1 => Some(0),
            2 => Some(1),
            3 => Some(2),
            4 => Some(4),
            5 | 8 => Some(8),
            9 => Some(16),
            6 | 7 => None,
            _ => return Err(bad()),
        };
        match fixed {
            Some(n) => b = b.get(n..).ok_or_else(bad)?,
            None => {
                let len =
                    u16::from_be_bytes([*b.first().ok_or_else(bad)?, *b.get(1).ok_or_else(bad)?])
                        as usize;
                let value = b.get(2..2 + len).ok_or_else(bad)?;
                if kind == 7 {
                    out.push((name, String::from_utf8_lossy(value).into_owned()));
                }
                b = &b[2 + len..];
            }
        }
    }
    Ok(out)
}

/// CRC-32 (IEEE), as the framing uses.
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        t
    });
    let mut crc = !0u32;
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// Encodes a message with string headers (tests and the loopback servers use it).
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut hb = Vec::new();
    for (k, v) in headers {
        hb.push(k.len() as u8);
        hb.extend_from_slice(k.as_bytes());
        hb.push(7);
        hb.extend_from_slice(&(v.len() as u16).to_be_bytes());
        hb.extend_from_slice(v.as_bytes());
    }
    let total = (PRELUDE + hb.len() + payload.len() + 4) as u32;
    let mut m = Vec::with_capacity(total as usize);
    m.extend_from_slice(&total.to_be_bytes());
    m.extend_from_slice(&(hb.len() as u32).to_be_bytes());
    let prelude_crc = crc32(&m);
    m.extend_from_slice(&prelude_crc.to_be_bytes());
    m.extend_from_slice(&hb);
    m.extend_from_slice(payload);
    let crc = crc32(&m);
    m.extend_from_slice(&crc.to_be_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn bytes_that_are_no_frames_wait_for_their_length_then_fail_as_the_sdk_says() {
        // `: ping` read as a length is ~975 MB: held back (not buffered) until it is all in.
        let mut d = Decoder::default();
        for _ in 0..1000 {
            assert_eq!(d.push(b": ping\n\n"), Ok(vec![]));
        }
        assert!(d.pending());
        assert!(d.buf.len() < 16);
        // A short frame with a wrong prelude fails once its 32 bytes are in.
        let mut d = Decoder::default();
        assert_eq!(d.push(b"\x00\x00\x00\x20garbage"), Ok(vec![]));
        let err = d.push(&[0u8; 32]).unwrap_err();
        assert!(
            err.starts_with("The prelude checksum specified in the message (")
                && err.contains(") does not match the calculated CRC32 checksum ("),
            "{err}"
        );
        let mut bad = encode(&[(":event-type", "messageStop")], b"{}");
        let n = bad.len();
        bad[n - 1] ^= 1;
        let err = Decoder::default().push(&bad).unwrap_err();
        assert!(err.starts_with("The message checksum ("), "{err}");
    }

    #[test]
    fn messages_split_anywhere_decode_whole() {
        let a = encode(
            &[(":event-type", "messageStart")],
            br#"{"role":"assistant"}"#,
        );
        let b = encode(
            &[(":event-type", "messageStop")],
            br#"{"stopReason":"end_turn"}"#,
        );
        let all = [a.clone(), b].concat();
        for cut in 0..all.len() {
            let mut d = Decoder::default();
            let mut got = d.push(&all[..cut]).unwrap();
            got.extend(d.push(&all[cut..]).unwrap());
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[0].header(":event-type"), Some("messageStart"));
            assert_eq!(got[1].payload, br#"{"stopReason":"end_turn"}"#);
            assert!(!d.pending());
        }
        let mut bad = a;
        let n = bad.len();
        bad[n - 5] ^= 1;
        assert!(Decoder::default().push(&bad).is_err());
    }
}
