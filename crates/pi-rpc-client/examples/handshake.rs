//! `cargo run -p pi-rpc-client --example handshake -- target/debug/pi`: starts pi in RPC mode
//! without a session, asks `get_protocol_info` and `get_state`, prints them and exits.

use pi_protocol::RpcCommand;
use pi_protocol::results::ResponseData;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), pi_rpc_client::Error> {
    let program = std::env::args().nth(1).unwrap_or_else(|| "pi".into());
    let mut client = pi_rpc_client::Client::spawn(&program, &["--no-session"], |_| {})?;
    let info = client.request(RpcCommand::GetProtocolInfo {}).await?;
    match info.data()? {
        Some(ResponseData::ProtocolInfo(info)) => println!(
            "{} {} (protocol {}), compatible with {} {}; additions: {}",
            info.program.name,
            info.program.version,
            info.protocol_version,
            info.compatible_with.name,
            info.compatible_with.version,
            info.additions.join(", ")
        ),
        // Pi itself answers `Unknown command`: a client can probe.
        _ => println!(
            "no get_protocol_info: {}",
            info.error().unwrap_or("no data")
        ),
    }
    let state = client.request(RpcCommand::GetState {}).await?;
    if let Some(ResponseData::State(state)) = state.data()?
        && let Some(model) = &state.model
    {
        println!("model: {}/{}", model.provider, model.id);
    }
    let status = client.close().await?;
    println!("pi exited: {status}");
    Ok(())
}
