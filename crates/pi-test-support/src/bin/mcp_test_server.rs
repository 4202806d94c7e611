//! `mcp-test-server`: the stdio MCP server of `pi_test_support::mcp_server`, as a process.
//!
//! With `--http` it serves over streamable HTTP instead (`pi_test_support::mcp_http`), printing
//! its URL on stdout, until stdin closes: `--port <n>` (default: a free one), `--oauth` (behind
//! the loopback authorization server), `--expires-in <seconds>` (access token lifetime),
//! `--get-stream` (offer the server-to-client stream). The other flags are the server's.

use std::io::Write;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let http = take_flag(&mut args, "--http");
    let oauth = take_flag(&mut args, "--oauth");
    let get_stream = take_flag(&mut args, "--get-stream");
    let port = take_value(&mut args, "--port").and_then(|p| p.parse::<u16>().ok());
    let expires_in = take_value(&mut args, "--expires-in").and_then(|p| p.parse::<u64>().ok());
    let opts = match pi_test_support::mcp_server::ServerOptions::from_args(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mcp-test-server: {e}");
            std::process::exit(2);
        }
    };
    if !http {
        std::process::exit(pi_test_support::mcp_server::run_stdio(&opts));
    }
    let oauth = oauth.then(|| pi_test_support::mcp_http::OAuthOptions {
        expires_in: expires_in.unwrap_or(3600),
        ..Default::default()
    });
    let options = pi_test_support::mcp_http::HttpOptions {
        server: opts,
        oauth,
        get_stream,
        ..Default::default()
    };
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        std::process::exit(1);
    };
    rt.block_on(async move {
        let server = match pi_test_support::mcp_http::serve(options, port.unwrap_or(0)).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("mcp-test-server: {e}");
                std::process::exit(1);
            }
        };
        println!("{}", server.url());
        let _ = std::io::stdout().flush();
        // Until stdin closes (the parent is done with it).
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        })
        .await;
        drop(server);
    });
}

fn take_flag(args: &mut Vec<String>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}

fn take_value(args: &mut Vec<String>, flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    args.remove(i);
    (i < args.len()).then(|| args.remove(i))
}
