"""The papers' tasks (synthetic, Long Range Arena, Speech Commands) and the one training stack."""
