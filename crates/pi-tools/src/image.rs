//! Images for the model: type detection from a file's first bytes, conversion of other formats
//! to PNG, and resizing to the inline limits (2000x2000 px and 4.5 MiB of base64 by default) the
//! way Pi does it. Decoding and encoding use the `image` crate with only PNG, JPEG, GIF, WebP and
//! BMP support; an image already within the limits is passed on byte for byte.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use std::io::Cursor;

/// How many leading bytes type detection looks at.
pub const SNIFF_BYTES: usize = 4100;

/// Limits for inline images (`inputLimits.images.resize` of a model overrides them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResizeLimits {
    pub max_width: u32,
    pub max_height: u32,
    /// Limit of the base64 payload, in bytes.
    pub max_bytes: usize,
    pub jpeg_quality: u8,
}

impl Default for ResizeLimits {
    fn default() -> ResizeLimits {
        ResizeLimits {
            max_width: 2000,
            max_height: 2000,
            max_bytes: 4_718_592,
            jpeg_quality: 80,
        }
    }
}

/// A processed image, or the note that replaces it.
#[derive(Debug, Clone, PartialEq)]
pub enum Processed {
    Image {
        /// Base64 of the bytes to send.
        data: String,
        mime_type: String,
        /// Notes for the model (conversion, resize mapping).
        hints: Vec<String>,
    },
    Omitted(String),
}

fn u16_le(b: &[u8], at: usize) -> u32 {
    u32::from(*b.get(at).unwrap_or(&0)) | (u32::from(*b.get(at + 1).unwrap_or(&0)) << 8)
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u16_le(b, at) | (u16_le(b, at + 2) << 16)
}

fn u32_be(b: &[u8], at: usize) -> u32 {
    (0..4).fold(0u32, |acc, i| {
        (acc << 8) | u32::from(*b.get(at + i).unwrap_or(&0))
    })
}

fn ascii_at(b: &[u8], at: usize, text: &str) -> bool {
    b.get(at..at + text.len()) == Some(text.as_bytes())
}

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

fn is_animated_png(b: &[u8]) -> bool {
    let mut offset = PNG_SIGNATURE.len();
    while offset + 8 <= b.len() {
        if ascii_at(b, offset + 4, "acTL") {
            return true;
        }
        if ascii_at(b, offset + 4, "IDAT") {
            return false;
        }
        let next = offset + 12 + u32_be(b, offset) as usize;
        if next <= offset || next > b.len() {
            return false;
        }
        offset = next;
    }
    false
}

fn is_bmp(b: &[u8]) -> bool {
    if b.len() < 26 {
        return false;
    }
    let declared_size = u32_le(b, 2);
    let pixel_offset = u32_le(b, 10);
    let dib_size = u32_le(b, 14);
    if declared_size != 0 && declared_size < 26 {
        return false;
    }
    if u64::from(pixel_offset) < 14 + u64::from(dib_size) {
        return false;
    }
    if declared_size != 0 && pixel_offset >= declared_size {
        return false;
    }
    let (planes, bits) = match dib_size {
        12 => (u16_le(b, 22), u16_le(b, 24)),
        40..=124 if b.len() >= 30 => (u16_le(b, 26), u16_le(b, 28)),
        _ => return false,
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bits)
}

/// The image type of a file from its first bytes, if it is one `read` sends as an image.
pub fn detect_mime(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(&[0xff, 0xd8, 0xff]) {
        return (b.get(3) != Some(&0xf7)).then_some("image/jpeg");
    }
    if b.starts_with(&PNG_SIGNATURE) {
        let is_png = b.len() >= 16 && u32_be(b, 8) == 13 && ascii_at(b, 12, "IHDR");
        return (is_png && !is_animated_png(b)).then_some("image/png");
    }
    if ascii_at(b, 0, "GIF87a") || ascii_at(b, 0, "GIF89a") {
        return Some("image/gif");
    }
    if ascii_at(b, 0, "RIFF") && ascii_at(b, 8, "WEBP") {
        return Some("image/webp");
    }
    if ascii_at(b, 0, "BM") && is_bmp(b) {
        return Some("image/bmp");
    }
    None
}

fn format_of(mime: &str) -> Option<ImageFormat> {
    match mime {
        "image/png" => Some(ImageFormat::Png),
        "image/jpeg" => Some(ImageFormat::Jpeg),
        "image/gif" => Some(ImageFormat::Gif),
        "image/webp" => Some(ImageFormat::WebP),
        "image/bmp" => Some(ImageFormat::Bmp),
        _ => None,
    }
}

/// Decodes and applies the EXIF orientation of JPEG and WebP images (as Pi does).
fn decode(bytes: &[u8], format: ImageFormat) -> Option<DynamicImage> {
    let mut reader = ImageReader::new(Cursor::new(bytes));
    reader.set_format(format);
    reader.no_limits();
    let mut decoder = reader.into_decoder().ok()?;
    let orientation = match format {
        ImageFormat::Jpeg | ImageFormat::WebP => decoder.orientation().ok(),
        _ => None,
    };
    let mut image = DynamicImage::from_decoder(decoder).ok()?;
    if let Some(o) = orientation {
        image.apply_orientation(o);
    }
    Some(image)
}

fn encode_png(image: &DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    image
        .to_rgba8()
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .ok()?;
    Some(out)
}

fn encode_jpeg(image: &DynamicImage, quality: u8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
    image.to_rgb8().write_with_encoder(encoder).ok()?;
    Some(out)
}

fn base64_size(len: usize) -> usize {
    len.div_ceil(3) * 4
}

/// JavaScript's `x.toFixed(2)` for the positive ratios of the resize note (halves round up).
fn to_fixed_2(x: f64) -> String {
    let exact = format!("{x:.30}");
    let (int_part, frac) = exact.split_once('.').unwrap_or((&exact, ""));
    let digits: Vec<u8> = frac.bytes().map(|b| b - b'0').collect();
    let mut cents: u64 = int_part.parse::<u64>().unwrap_or(0) * 100
        + u64::from(*digits.first().unwrap_or(&0)) * 10
        + u64::from(*digits.get(1).unwrap_or(&0));
    if digits.get(2).is_some_and(|d| *d >= 5) {
        cents += 1;
    }
    format!("{}.{:02}", cents / 100, cents % 100)
}

struct Resized {
    data: String,
    mime_type: String,
    original: (u32, u32),
    size: (u32, u32),
    was_resized: bool,
}

fn resize(bytes: &[u8], mime: &str, limits: &ResizeLimits) -> Option<Resized> {
    let image = decode(bytes, format_of(mime)?)?;
    let (ow, oh) = (image.width(), image.height());
    if ow <= limits.max_width
        && oh <= limits.max_height
        && base64_size(bytes.len()) < limits.max_bytes
    {
        return Some(Resized {
            data: STANDARD.encode(bytes),
            mime_type: mime.to_string(),
            original: (ow, oh),
            size: (ow, oh),
            was_resized: false,
        });
    }
    let (mut w, mut h) = (ow, oh);
    if w > limits.max_width {
        h = (f64::from(h) * f64::from(limits.max_width) / f64::from(w)).round() as u32;
        w = limits.max_width;
    }
    if h > limits.max_height {
        w = (f64::from(w) * f64::from(limits.max_height) / f64::from(h)).round() as u32;
        h = limits.max_height;
    }
    let mut qualities: Vec<u8> = Vec::new();
    for q in [limits.jpeg_quality, 85, 70, 55, 40] {
        if !qualities.contains(&q) {
            qualities.push(q);
        }
    }
    loop {
        let scaled = image.resize_exact(w.max(1), h.max(1), FilterType::Lanczos3);
        let found = |data: String, mime_type: &str| Resized {
            data,
            mime_type: mime_type.to_string(),
            original: (ow, oh),
            size: (w, h),
            was_resized: true,
        };
        // The smaller of PNG and JPEG at the configured quality; lower JPEG qualities only if
        // neither fits (encoded lazily: the choice is the same as encoding all up front).
        let png = encode_png(&scaled).map(|b| STANDARD.encode(b));
        let jpeg = encode_jpeg(&scaled, qualities[0]).map(|b| STANDARD.encode(b));
        let mut preferred: Vec<(String, &str)> = Vec::new();
        match (png, jpeg) {
            (Some(p), Some(j)) if j.len() < p.len() => {
                preferred.extend([(j, "image/jpeg"), (p, "image/png")])
            }
            (p, j) => preferred.extend(
                p.map(|p| (p, "image/png"))
                    .into_iter()
                    .chain(j.map(|j| (j, "image/jpeg"))),
            ),
        }
        if let Some((data, mime_type)) =
            preferred.into_iter().find(|c| c.0.len() < limits.max_bytes)
        {
            return Some(found(data, mime_type));
        }
        let lower = qualities[1..]
            .iter()
            .filter_map(|q| encode_jpeg(&scaled, *q).map(|b| STANDARD.encode(b)))
            .find(|data| data.len() < limits.max_bytes);
        if let Some(data) = lower {
            return Some(found(data, "image/jpeg"));
        }
        if w == 1 && h == 1 {
            return None;
        }
        let next_w = if w == 1 {
            1
        } else {
            ((f64::from(w) * 0.75).floor() as u32).max(1)
        };
        let next_h = if h == 1 {
            1
        } else {
            ((f64::from(h) * 0.75).floor() as u32).max(1)
        };
        if (next_w, next_h) == (w, h) {
            return None;
        }
        (w, h) = (next_w, next_h);
    }
}

/// Pi's `processImage`: normalizes the format (other than PNG, JPEG, GIF and WebP to PNG) and,
/// with `auto_resize`, fits the image into `limits`.
pub fn process_image(
    bytes: &[u8],
    mime: &str,
    auto_resize: bool,
    limits: &ResizeLimits,
) -> Processed {
    let base = mime.split(';').next().unwrap_or(mime).trim().to_lowercase();
    let supported = match base.as_str() {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    };
    let converted;
    let (bytes, mime_type, converted_from) = match supported {
        Some(m) => (bytes, m, None),
        None => {
            let png = format_of(&base)
                .and_then(|f| decode(bytes, f))
                .and_then(|image| encode_png(&image));
            let Some(png) = png else {
                return Processed::Omitted(
                    "[Image omitted: could not be converted to a supported inline image format.]"
                        .into(),
                );
            };
            converted = png;
            (converted.as_slice(), "image/png", Some(base.clone()))
        }
    };
    let conversion_hint = |to: &str| {
        converted_from
            .as_ref()
            .filter(|from| from.as_str() != to)
            .map(|from| format!("[Image converted from {from} to {to}.]"))
    };
    if !auto_resize {
        return Processed::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.to_string(),
            hints: conversion_hint(mime_type).into_iter().collect(),
        };
    }
    let Some(resized) = resize(bytes, mime_type, limits) else {
        return Processed::Omitted(
            "[Image omitted: could not be resized below the inline image size limit.]".into(),
        );
    };
    let mut hints: Vec<String> = conversion_hint(&resized.mime_type).into_iter().collect();
    if resized.was_resized {
        let (ow, oh) = resized.original;
        let (w, h) = resized.size;
        hints.push(format!(
            "[Image: original {ow}x{oh}, displayed at {w}x{h}. Multiply coordinates by {} to map to original image.]",
            to_fixed_2(f64::from(ow) / f64::from(w))
        ));
    }
    Processed::Image {
        data: resized.data,
        mime_type: resized.mime_type,
        hints,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_round_half_up_like_to_fixed() {
        assert_eq!(to_fixed_2(2.125), "2.13");
        assert_eq!(to_fixed_2(1.0), "1.00");
        assert_eq!(to_fixed_2(2.5), "2.50");
        assert_eq!(to_fixed_2(1.3333333), "1.33");
    }

    #[test]
    fn types_are_detected_from_content() {
        assert_eq!(detect_mime(b"GIF89a...."), Some("image/gif"));
        assert_eq!(detect_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(detect_mime(&[0xff, 0xd8, 0xff, 0xf7]), None);
        assert_eq!(detect_mime(b"hello"), None);
    }
}
