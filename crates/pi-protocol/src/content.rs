//! Content blocks of messages (`TextContent`, `ImageContent`, ... in pi-ai's `types.d.ts`).

use serde::{Deserialize, Serialize};

/// `{"type":"image","data":<base64>,"mimeType":...}`; the `type` tag is written by the enclosing
/// content enum, or by [`ImageContent`]'s own serializer when it stands alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename = "image")]
struct ImageWire {
    data: String,
    #[serde(rename = "mimeType")]
    mime_type: String,
}

impl Serialize for ImageContent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ImageWire {
            data: self.data.clone(),
            mime_type: self.mime_type.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ImageContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ImageWire::deserialize(d)?;
        Ok(ImageContent {
            data: w.data,
            mime_type: w.mime_type,
        })
    }
}
