"""Torch building blocks with the papers' equations; they know nothing of fairseq tasks."""
from .embedding_roles import EmbeddingRoleBinding
from .role_dictionary import DiscreteRoleBinding
from .tp_attention import TPMultiheadAttention
from .tp_layers import RoleDecoderLayer, RoleEncoderLayer, TPDecoderLayer, TPEncoderLayer

__all__ = [
    "DiscreteRoleBinding",
    "EmbeddingRoleBinding",
    "RoleDecoderLayer",
    "RoleEncoderLayer",
    "TPDecoderLayer",
    "TPEncoderLayer",
    "TPMultiheadAttention",
]
