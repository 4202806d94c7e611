//! Content blocks of messages (`TextContent`, `ImageContent`, ... in pi-ai's `types.d.ts`).

use crate::record::{Rest, record};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `{"type":"image","data":<base64>,"mimeType":...}`; the `type` tag is written by the enclosing
/// content enum, or by [`ImageContent`]'s own serializer when it stands alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename = "image")]
struct ImageWire {
    data: String,
    #[serde(rename = "mimeType")]
    mime_type: String,
}

impl Serialize for ImageContent {
    /// `ImageWire`'s form without copying the (often large) base64 text.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ImageWire", 3)?;
        st.serialize_field("type", "image")?;
        st.serialize_field("data", &pi_js::json_str::JsonStr(&self.data))?;
        st.serialize_field("mimeType", &self.mime_type)?;
        st.end()
    }
}

impl schemars::JsonSchema for ImageContent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ImageContent".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An image, base64-encoded.",
            "type": "object",
            "properties": {
                "type": { "const": "image" },
                "data": { "type": "string", "description": "Base64 of the image bytes." },
                "mimeType": { "type": "string" }
            },
            "required": ["type", "data", "mimeType"]
        })
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

record! {
    /// `{"type":"text","text":...,"textSignature"?}`. The signature is opaque provider metadata.
    pub struct TextContent {
        @tag "type" = "text";
        text text: String = "text";
        opt text_signature: String = "textSignature";
    }
}

impl TextContent {
    pub fn new(text: impl Into<String>) -> TextContent {
        TextContent {
            text: text.into(),
            text_signature: None,
            rest: Rest::default(),
        }
    }
}

record! {
    /// `{"type":"thinking","thinking":...,"thinkingSignature"?,"redacted"?}`. A redacted block keeps
    /// the provider's encrypted payload in `thinkingSignature`.
    pub struct ThinkingContent {
        @tag "type" = "thinking";
        text thinking: String = "thinking";
        opt thinking_signature: String = "thinkingSignature";
        opt redacted: bool = "redacted";
    }
}

impl ThinkingContent {
    pub fn new(thinking: impl Into<String>) -> ThinkingContent {
        ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: None,
            redacted: None,
            rest: Rest::default(),
        }
    }
}

record! {
    /// A tool call made by the model. `arguments` is whatever JSON object the model produced;
    /// when its text was not a JSON object, `arguments` is `{}` and `argumentsError` explains why.
    pub struct ToolCall {
        @tag "type" = "toolCall";
        req id: String = "id";
        req name: String = "name";
        req arguments: Map<String, Value> = "arguments";
        opt thought_signature: String = "thoughtSignature";
        opt namespace: String = "namespace";
        opt arguments_error: String = "argumentsError";
    }
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Map<String, Value>,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            rest: Rest::default(),
        }
    }
}

/// Reads the `type` of a content block object.
fn block_type(map: &Map<String, Value>) -> Result<&str, serde_json::Error> {
    match map.get("type") {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(serde::de::Error::custom(format!(
            "content block `type` must be a string, got {other}"
        ))),
        None => Err(serde::de::Error::custom("content block without `type`")),
    }
}

fn unknown_block(kind: &str, allowed: &str) -> serde_json::Error {
    serde::de::Error::custom(format!(
        "unknown content block type `{kind}`, expected {allowed}"
    ))
}

/// Declares an enum over content block structs, dispatching on the `type` key.
macro_rules! block_enum {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident { $( $variant:ident($ty:ty) = $tag:literal, )* }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $( $variant($ty), )*
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( $name::$variant(b) => b.serialize(s), )*
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = Map::<String, Value>::deserialize(d)?;
                $name::from_map(map).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let variants = vec![$( g.subschema_for::<$ty>().to_value(), )*];
                crate::union_schema::one_of(&[$($doc),*], variants)
            }
        }

        impl $name {
            /// Builds the block from a parsed JSON object.
            pub fn from_map(map: Map<String, Value>) -> Result<Self, serde_json::Error> {
                match block_type(&map)? {
                    $( $tag => block_from_map::<$ty>(map).map($name::$variant), )*
                    other => Err(unknown_block(other, concat!($("`", $tag, "` "),*))),
                }
            }
        }

        $(
            impl From<$ty> for $name {
                fn from(b: $ty) -> Self {
                    $name::$variant(b)
                }
            }
        )*
    };
}

/// Builds one block type from a map (records use `from_map`, [`ImageContent`] serde).
trait FromBlockMap: Sized {
    fn from_block_map(map: Map<String, Value>) -> Result<Self, serde_json::Error>;
}

impl FromBlockMap for TextContent {
    fn from_block_map(map: Map<String, Value>) -> Result<Self, serde_json::Error> {
        TextContent::from_map(map)
    }
}
impl FromBlockMap for ThinkingContent {
    fn from_block_map(map: Map<String, Value>) -> Result<Self, serde_json::Error> {
        ThinkingContent::from_map(map)
    }
}
impl FromBlockMap for ToolCall {
    fn from_block_map(map: Map<String, Value>) -> Result<Self, serde_json::Error> {
        ToolCall::from_map(map)
    }
}
impl FromBlockMap for ImageContent {
    fn from_block_map(map: Map<String, Value>) -> Result<Self, serde_json::Error> {
        serde_json::from_value(Value::Object(map))
    }
}

fn block_from_map<T: FromBlockMap>(map: Map<String, Value>) -> Result<T, serde_json::Error> {
    T::from_block_map(map)
}

block_enum! {
    /// A block of user, tool-result or custom-message content: text or image.
    pub enum UserBlock {
        Text(TextContent) = "text",
        Image(ImageContent) = "image",
    }
}

block_enum! {
    /// A block of assistant content: text, thinking or a tool call.
    pub enum AssistantBlock {
        Text(TextContent) = "text",
        Thinking(ThinkingContent) = "thinking",
        ToolCall(ToolCall) = "toolCall",
    }
}

block_enum! {
    /// Any content block; used where Pi accepts the content of any message kind (context edits).
    pub enum ContentBlock {
        Text(TextContent) = "text",
        Thinking(ThinkingContent) = "thinking",
        Image(ImageContent) = "image",
        ToolCall(ToolCall) = "toolCall",
    }
}

/// Content that is either a plain string or a list of blocks (`string | B[]` in Pi's types).
/// Pi itself always builds blocks for user prompts, but strings occur in files and in
/// extension-built messages; whichever form was read is written back.
#[derive(Debug, Clone, PartialEq)]
pub enum StringOrBlocks<B> {
    Text(String),
    Blocks(Vec<B>),
}

/// Content of user and custom messages and of custom-message entries.
pub type UserContent = StringOrBlocks<UserBlock>;
/// Content of system messages (`string | TextContent[]`).
pub type SystemContent = StringOrBlocks<TextContent>;
/// Content a context edit may substitute (the content of any editable message).
pub type EditableContent = StringOrBlocks<ContentBlock>;

impl<B> StringOrBlocks<B> {
    /// A single string.
    pub fn text(s: impl Into<String>) -> Self {
        StringOrBlocks::Text(s.into())
    }
}

impl<B: Serialize> Serialize for StringOrBlocks<B> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StringOrBlocks::Text(t) => s.serialize_str(t),
            StringOrBlocks::Blocks(b) => b.serialize(s),
        }
    }
}

impl<B: schemars::JsonSchema> schemars::JsonSchema for StringOrBlocks<B> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("StringOr{}List", B::schema_name()).into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let block = g.subschema_for::<B>().to_value();
        schemars::json_schema!({
            "anyOf": [{ "type": "string" }, { "type": "array", "items": block }]
        })
    }
}

impl<'de, B: serde::de::DeserializeOwned> Deserialize<'de> for StringOrBlocks<B> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(StringOrBlocks::Text(s)),
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(StringOrBlocks::Blocks)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "expected a string or an array of content blocks, got {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(s: &str) {
        let v: T = serde_json::from_str(s).unwrap();
        assert_eq!(to_js_string(&v).unwrap(), s);
    }

    #[test]
    fn blocks_round_trip() {
        rt::<AssistantBlock>(r#"{"type":"text","text":"hi","textSignature":"s"}"#);
        rt::<AssistantBlock>(
            r#"{"type":"thinking","thinking":"","thinkingSignature":"x","redacted":true}"#,
        );
        rt::<AssistantBlock>(
            r#"{"type":"toolCall","id":"c","name":"bash","arguments":{},"argumentsError":"bad"}"#,
        );
        rt::<UserBlock>(r#"{"type":"image","data":"QQ==","mimeType":"image/png"}"#);
        rt::<UserContent>(r#""plain""#);
        rt::<UserContent>(
            r#"[{"type":"text","text":"a"},{"type":"image","data":"","mimeType":"image/gif"}]"#,
        );
        rt::<EditableContent>(r#"[{"type":"toolCall","id":"c","name":"n","arguments":{"a":1}}]"#);
        assert!(
            serde_json::from_str::<UserBlock>(
                r#"{"type":"toolCall","id":"c","name":"n","arguments":{}}"#
            )
            .is_err()
        );
    }
}
