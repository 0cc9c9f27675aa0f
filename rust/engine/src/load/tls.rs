//! TLS client configuration (rustls with the `ring` provider).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

/// A rustls client config offering `http/1.1` via ALPN and trusting the
/// Mozilla roots (webpki-roots); with `insecure`, certificates are not
/// verified at all (for self-signed test servers), though handshake
/// signatures still are.
///
/// # Errors
/// A message when rustls rejects the protocol versions (not expected).
pub fn client_config(insecure: bool) -> Result<Arc<ClientConfig>, String> {
    client_config_alpn(insecure, &[b"http/1.1"])
}

/// [`client_config`] offering the ALPN protocols `alpn` instead (`h2` for
/// HTTP/2, `h3` for HTTP/3 over QUIC).
///
/// # Errors
/// A message when rustls rejects the protocol versions (not expected).
pub fn client_config_alpn(insecure: bool, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoCertificateVerification(provider)))
            .with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The TLS server name (SNI and certificate check) for `host`.
///
/// # Errors
/// A message when `host` is neither a DNS name nor an IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string())
        .map_err(|e| format!("{host:?} is not a valid TLS server name: {e}"))
}

#[derive(Debug)]
struct NoCertificateVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCertificateVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_build_and_offer_http11() {
        for insecure in [false, true] {
            let c = client_config(insecure).unwrap();
            assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()]);
        }
        let c = client_config_alpn(true, &[b"h2"]).unwrap();
        assert_eq!(c.alpn_protocols, vec![b"h2".to_vec()]);
        assert!(server_name("example.test").is_ok());
        assert!(server_name("::1").is_ok());
        assert!(server_name("bad name!").is_err());
    }
}
