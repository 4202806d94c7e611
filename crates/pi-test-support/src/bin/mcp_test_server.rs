//! `mcp-test-server`: the stdio MCP server of `pi_test_support::mcp_server`, as a process.

fn main() {
    let opts = match pi_test_support::mcp_server::ServerOptions::from_args(std::env::args().skip(1))
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mcp-test-server: {e}");
            std::process::exit(2);
        }
    };
    std::process::exit(pi_test_support::mcp_server::run_stdio(&opts));
}
