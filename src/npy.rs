//! Writing and reading float32 `.npy` files (NumPy format 1.0), the interchange format of
//! `seamcut embed`. Hand-written: the format is a 10-byte preamble plus a Python-dict
//! header, and a crate for it would pull in a whole array library for twenty lines.

use std::io::{Read, Write};
use std::path::Path;

use crate::{Error, Result};

/// Write `data` as a little-endian float32 array of shape `[rows, cols]`.
///
/// # Errors
/// If the file cannot be written.
pub fn write_f32(path: &Path, data: &[f32], rows: usize, cols: usize) -> Result<()> {
    assert_eq!(data.len(), rows * cols, "data does not match the shape");
    let mut out = header_f32(rows, cols);
    out.reserve(data.len() * 4);
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(&out).map_err(|e| Error::io(path, e))
}

/// The preamble and header of a little-endian float32 array of shape `[rows, cols]`; the
/// `rows * cols` values follow it, little-endian (for writers that stream the data).
#[must_use]
pub fn header_f32(rows: usize, cols: usize) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // Pad so that the data starts on a multiple of 64 bytes, ending the header with '\n'.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}

/// Read a little-endian float32 or float16 2-D `.npy` file as f32: `(data, rows, cols)`.
///
/// # Errors
/// If the file is not such an array.
pub fn read_f32(path: &Path) -> Result<(Vec<f32>, usize, usize)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(|e| Error::io(path, e))?;
    let bad = |m: &str| Error::Config(format!("{}: {m}", path.display()));
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file"));
    }
    let (hlen, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
    };
    let header = std::str::from_utf8(bytes.get(start..start + hlen).ok_or_else(|| bad("truncated header"))?)
        .map_err(|_| bad("header is not text"))?;
    let f16 = header.contains("'<f2'");
    if !(header.contains("'<f4'") || f16) || header.contains("'fortran_order': True") {
        return Err(bad("only C-order little-endian float32/float16 arrays are supported"));
    }
    let shape =
        header.split("'shape': (").nth(1).and_then(|s| s.split(')').next()).ok_or_else(|| bad("no shape"))?;
    let dims: Vec<usize> = shape.split(',').filter_map(|d| d.trim().parse().ok()).collect();
    let (rows, cols) = match dims.as_slice() {
        [r, c] => (*r, *c),
        [r] => (*r, 1),
        _ => return Err(bad("expected a 2-D array")),
    };
    let body = &bytes[start + hlen..];
    let data: Vec<f32> = if f16 {
        body.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
    } else {
        body.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    };
    if data.len() != rows * cols {
        return Err(bad("data length does not match the shape"));
    }
    Ok((data, rows, cols))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        let data: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
        super::write_f32(&p, &data, 3, 4).unwrap();
        let (back, r, c) = super::read_f32(&p).unwrap();
        assert_eq!((r, c), (3, 4));
        assert_eq!(back, data);
        assert_eq!(std::fs::metadata(&p).unwrap().len() % 16, 0);
    }
}
