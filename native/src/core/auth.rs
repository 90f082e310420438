//! Mutual authentication of the upgrade with a shared secret (`hadronio.secret` /
//! `HADRONIO_SECRET`): challenge-response over the TCP control channel, HMAC-SHA-256.
//!
//! Each side sends `AUTH(challenge: 16 random bytes)` right after its HELLO and answers the peer's
//! challenge with `AUTH(proof: HMAC(secret, label || peer challenge || own challenge))`, where the
//! label names the answering side's role so that a proof cannot be reflected back. A side accepts
//! the peer's ADDR (and so creates a UCX endpoint) only after the peer's proof checked out; a
//! peer without the secret, or with another one, is refused before any endpoint exists.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

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
    // The kernel's generator (getrandom(2)) does not fail once the system has booted; should it,
    // a challenge of zeros would let a recorded proof be replayed, so stop instead.
    getrandom::getrandom(&mut bytes).expect("the kernel's random number generator failed");
    bytes
}

/// The keyed MAC of the side with role `client` over the two challenges.
fn mac(secret: &Secret, client: bool, peer_challenge: &[u8], own_challenge: &[u8]) -> Hmac<Sha256> {
    let label = if client { CLIENT_LABEL } else { SERVER_LABEL };
    // HMAC takes keys of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(&secret.0).expect("HMAC accepts any key length");
    mac.update(label);
    mac.update(peer_challenge);
    mac.update(own_challenge);
    mac
}

/// The proof the side with role `client` gives for the peer's challenge.
pub fn proof(secret: &Secret, client: bool, peer_challenge: &[u8], own_challenge: &[u8]) -> [u8; PROOF_LEN] {
    mac(secret, client, peer_challenge, own_challenge).finalize().into_bytes().into()
}

/// Checks the peer's proof (in constant time).
pub fn verify(secret: &Secret, peer_is_client: bool, own_challenge: &[u8], peer_challenge: &[u8], presented: &[u8]) -> bool {
    mac(secret, peer_is_client, own_challenge, peer_challenge).verify_slice(presented).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_proof_is_the_hmac_sha256_of_label_and_challenges() {
        // RFC 4231 test case 2 (key "Jefe"), split across label and challenges the way a proof is.
        let secret = Secret::new(b"Jefe").unwrap();
        let mac = |label: &[u8], a: &[u8], b: &[u8]| {
            let mut mac = Hmac::<Sha256>::new_from_slice(&secret.0).unwrap();
            mac.update(label);
            mac.update(a);
            mac.update(b);
            hex(&mac.finalize().into_bytes())
        };
        assert_eq!(mac(b"what do ya ", b"want for ", b"nothing?"), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        let (peer, own) = ([1u8; CHALLENGE_LEN], [2u8; CHALLENGE_LEN]);
        assert_eq!(hex(&proof(&secret, true, &peer, &own)), mac(CLIENT_LABEL, &peer, &own));
        assert_eq!(hex(&proof(&secret, false, &peer, &own)), mac(SERVER_LABEL, &peer, &own));
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
