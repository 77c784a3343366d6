"""The layer one position at a time, with a cache of keys and values (see README.md)."""

from kv_cache.step import attention_step
