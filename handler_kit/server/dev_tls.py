"""A local certificate authority and a localhost certificate for ``serve --dev-tls``.

Runtimes call hooks over HTTPS only, so a developer needs TLS on 127.0.0.1 too. The CA and
the certificate are made once and cached in a folder (``serve`` uses
:meth:`ServeConfig.dev_tls_folder <handler_kit.config.ServeConfig.dev_tls_folder>`), so the CA a
client was told to trust stays the same across restarts. For development only.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

VALID_DAYS = 365


@dataclass(frozen=True)
class DevCertificate:
    ca_file: Path
    cert_file: Path
    key_file: Path


def ensure_dev_certificate(directory: Path) -> DevCertificate:
    """The cached development CA and localhost certificate, made when missing or expiring."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = directory
    paths = DevCertificate(folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    now = datetime.datetime.now(datetime.UTC)
    if all(p.exists() for p in (paths.ca_file, paths.cert_file, paths.key_file)):
        current = x509.load_pem_x509_certificate(paths.cert_file.read_bytes())
        if current.not_valid_after_utc - now > datetime.timedelta(days=7):
            return paths
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "handler-kit development CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths.ca_file.write_bytes(ca_cert.public_bytes(pem))
    paths.cert_file.write_bytes(cert.public_bytes(pem))
    key_bytes = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(paths.key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_bytes)
    return paths
