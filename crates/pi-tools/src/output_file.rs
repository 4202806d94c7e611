//! Files that keep output the model was not shown in full: `<tmpdir>/<prefix>-<16 hex><ext>`,
//! readable only by the user (output can carry private data), never following a planted link.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

fn random_hex() -> io::Result<String> {
    let mut bytes = [0u8; 8];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates a new output file and returns it with its path.
pub fn create_output_file(prefix: &str, extension: &str) -> io::Result<(PathBuf, File)> {
    let path = std::env::temp_dir().join(format!("{prefix}-{}{extension}", random_hex()?));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    Ok((path, file))
}
