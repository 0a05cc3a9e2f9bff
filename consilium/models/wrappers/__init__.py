"""Cross-cutting behaviour around the model protocol (STYLE.md 12): agents never retry, cache or limit."""

from consilium.models.wrappers.answers import AnswerCheckModel
from consilium.models.wrappers.base import WrapperModel
from consilium.models.wrappers.cache import CachedModel
from consilium.models.wrappers.limit import ConcurrencyLimitedModel, current_work_key, work_item
from consilium.models.wrappers.recording import CallRecord, CallRecorder, RecordingModel
from consilium.models.wrappers.repair import StructuredOutputModel
from consilium.models.wrappers.retry import RetryingModel, RetryPolicy

__all__ = ["AnswerCheckModel", "CachedModel", "CallRecord", "CallRecorder", "ConcurrencyLimitedModel",
           "RecordingModel", "RetryPolicy", "RetryingModel", "StructuredOutputModel", "WrapperModel",
           "current_work_key", "work_item"]
