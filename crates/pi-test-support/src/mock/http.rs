//! Just enough HTTP/1.1 for a loopback mock: read one request (content-length or chunked body),
//! answer with a full body or a chunked stream, then close the connection.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    /// Path with query string, as sent.
    pub target: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Reads one request. `Ok(None)` when the peer closed before sending anything.
pub async fn read_request<R>(reader: &mut BufReader<R>) -> io::Result<Option<HttpRequest>>
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = reader.read_until(b'\n', &mut line).await?;
        if n == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(bad("connection closed inside request head"))
            };
        }
        if line == b"\r\n" || line == b"\n" {
            if head.is_empty() {
                continue;
            }
            break;
        }
        head.push(String::from_utf8_lossy(&line).trim_end().to_string());
        if head.iter().map(String::len).sum::<usize>() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
    }
    let mut first = head[0].split(' ');
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = head[1..]
        .iter()
        .filter_map(|h| {
            let (n, v) = h.split_once(':')?;
            Some((n.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    let mut req = HttpRequest {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if req
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        req.body = read_chunked(reader).await?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        if len > MAX_BODY {
            return Err(bad("request body too large"));
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).await?;
        req.body = body;
    }
    Ok(Some(req))
}

async fn read_chunked<R>(reader: &mut BufReader<R>) -> io::Result<Vec<u8>>
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await?;
        let size_text = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad("bad chunk size"))?;
        if size == 0 {
            // Trailers until the blank line.
            loop {
                let mut t = String::new();
                if reader.read_line(&mut t).await? == 0 || t.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).await?;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf).await?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)]) -> String {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("connection: close\r\n");
    out
}

/// Writes a complete response with a `content-length` body.
pub async fn write_full<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut out = head(status, headers);
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    w.write_all(out.as_bytes()).await?;
    w.write_all(body).await?;
    w.flush().await
}

/// Starts a chunked response; follow with [`write_chunk`] and [`finish_chunked`].
pub async fn write_chunked_head<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
) -> io::Result<()> {
    let mut out = head(status, headers);
    out.push_str("transfer-encoding: chunked\r\n\r\n");
    w.write_all(out.as_bytes()).await?;
    w.flush().await
}

pub async fn write_chunk<W: AsyncWrite + Unpin>(w: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    w.write_all(format!("{:x}\r\n", data.len()).as_bytes())
        .await?;
    w.write_all(data).await?;
    w.write_all(b"\r\n").await?;
    w.flush().await
}

pub async fn finish_chunked<W: AsyncWrite + Unpin>(w: &mut W) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n").await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_content_length_and_chunked_bodies() {
        let raw = b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        let mut r = BufReader::new(&raw[..]);
        let req = read_request(&mut r).await.unwrap().unwrap();
        assert_eq!(req.path(), "/v1/messages");
        assert_eq!(req.header("host"), Some("x"));
        assert_eq!(req.body, b"{}");

        let raw = b"POST /a HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{\"\r\n3\r\na\":\r\n0\r\n\r\n";
        let mut r = BufReader::new(&raw[..]);
        let req = read_request(&mut r).await.unwrap().unwrap();
        assert_eq!(req.body, b"{\"a\":");
    }
}
