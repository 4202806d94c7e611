//! `cargo run -p pi-export --example export -- <session.jsonl> [out.html]`: the `--export`
//! path on its own, for looking at pages while working on the template.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(input) = args.first() else {
        eprintln!("usage: export <session.jsonl> [out.html]");
        std::process::exit(2);
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let output = args.get(1).map(std::path::Path::new);
    match pi_export::export_session_file(std::path::Path::new(input), output, &cwd) {
        Ok(path) => println!("Exported to: {}", path.display()),
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1);
        }
    }
}
