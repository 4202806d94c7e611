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

/// Incremental decoder.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

const PRELUDE: usize = 12;
/// Messages larger than this are refused (the service's limit is 16 MiB).
const MAX_MESSAGE: usize = 24 * 1024 * 1024;

impl Decoder {
    /// Appends `chunk`; returns the messages it completes, or the framing error.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Message>, String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut at = 0;
        while self.buf.len() - at >= PRELUDE {
            let b = &self.buf[at..];
            let total = be32(&b[0..4]) as usize;
            let headers_len = be32(&b[4..8]) as usize;
            if crc32(&b[0..8]) != be32(&b[8..12]) {
                return Err("Prelude checksum mismatch".into());
            }
            if total < PRELUDE + 4 + headers_len || total > MAX_MESSAGE {
                return Err(format!("Invalid event-stream message length: {total}"));
            }
            if b.len() < total {
                break;
            }
            let msg = &b[..total];
            if crc32(&msg[..total - 4]) != be32(&msg[total - 4..]) {
                return Err("Message checksum mismatch".into());
            }
            let headers = parse_headers(&msg[PRELUDE..PRELUDE + headers_len])?;
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
        !self.buf.is_empty()
    }
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
