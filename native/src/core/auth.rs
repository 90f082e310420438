//! Mutual authentication of the upgrade with a shared secret (`hadronio.secret` /
//! `HADRONIO_SECRET`): challenge-response over the TCP control channel, HMAC-SHA-256.
//!
//! Each side sends `AUTH(challenge: 16 random bytes)` right after its HELLO and answers the peer's
//! challenge with `AUTH(proof: HMAC(secret, label || peer challenge || own challenge))`, where the
//! label names the answering side's role so that a proof cannot be reflected back. A side accepts
//! the peer's ADDR (and so creates a UCX endpoint) only after the peer's proof checked out; a
//! peer without the secret, or with another one, is refused before any endpoint exists.

use std::fmt;

pub const CHALLENGE_LEN: usize = 16;
pub const PROOF_LEN: usize = 32;

const CLIENT_LABEL: &[u8] = b"hadroNIO client proof v1";
const SERVER_LABEL: &[u8] = b"hadroNIO server proof v1";

/// A shared secret (never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: &[u8]) -> Option<Secret> {
        if bytes.is_empty() {
            None
        } else {
            Some(Secret(bytes.to_vec()))
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Fresh random challenge bytes from the kernel.
pub fn challenge() -> [u8; CHALLENGE_LEN] {
    let mut bytes = [0u8; CHALLENGE_LEN];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: writes at most the remaining bytes of the local array.
        let n = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr() as *mut libc::c_void, bytes.len() - filled, 0) };
        if n > 0 {
            filled += n as usize;
        }
    }
    bytes
}

/// The proof the side with role `client` gives for the peer's challenge.
pub fn proof(secret: &Secret, client: bool, peer_challenge: &[u8], own_challenge: &[u8]) -> [u8; PROOF_LEN] {
    let label = if client { CLIENT_LABEL } else { SERVER_LABEL };
    let mut message = Vec::with_capacity(label.len() + 2 * CHALLENGE_LEN);
    message.extend_from_slice(label);
    message.extend_from_slice(peer_challenge);
    message.extend_from_slice(own_challenge);
    hmac_sha256(&secret.0, &message)
}

/// Checks the peer's proof in constant time.
pub fn verify(secret: &Secret, peer_is_client: bool, own_challenge: &[u8], peer_challenge: &[u8], presented: &[u8]) -> bool {
    let expected = proof(secret, peer_is_client, own_challenge, peer_challenge);
    presented.len() == PROOF_LEN && expected.iter().zip(presented).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 (FIPS 180-4).
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut padded = data.to_vec();
    padded.push(0x80);
    while padded.len() % 64 != 56 {
        padded.push(0);
    }
    padded.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in padded.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (state, value) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *state = state.wrapping_add(value);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// HMAC-SHA-256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&sha256(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Vec::with_capacity(64 + message.len());
    inner.extend(block.iter().map(|b| b ^ 0x36));
    inner.extend_from_slice(message);
    let inner_hash = sha256(&inner);
    let mut outer = Vec::with_capacity(96);
    outer.extend(block.iter().map(|b| b ^ 0x5c));
    outer.extend_from_slice(&inner_hash);
    sha256(&outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_test_vectors() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(&sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn hmac_test_vectors() {
        // RFC 4231 test cases 1 and 2.
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn proofs_check_out_only_with_the_same_secret_and_role() {
        let secret = Secret::new(b"s3cret").unwrap();
        let other = Secret::new(b"other").unwrap();
        let client_challenge = challenge();
        let server_challenge = challenge();
        assert_ne!(client_challenge, server_challenge);
        // The client answers the server's challenge; the server verifies.
        let client_proof = proof(&secret, true, &server_challenge, &client_challenge);
        assert!(verify(&secret, true, &server_challenge, &client_challenge, &client_proof));
        assert!(!verify(&other, true, &server_challenge, &client_challenge, &client_proof));
        // A reflected proof (client role presented as server) is refused.
        assert!(!verify(&secret, false, &server_challenge, &client_challenge, &client_proof));
        assert!(!verify(&secret, true, &server_challenge, &client_challenge, &client_proof[..31]));
        assert!(Secret::new(b"").is_none());
    }
}
