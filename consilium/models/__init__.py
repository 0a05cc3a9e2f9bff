"""Model backends behind one async protocol, with wrappers for retry, cache, limits and recording."""

from consilium.models.factory import ModelOptions, build_model, for_run, open_backend
from consilium.models.protocol import ChatModel
from consilium.models.structured import OutputInvalid, OutputSchema
from consilium.models.types import CallTag, GenerationSettings, Message, ModelRequest, ModelResponse
from consilium.models.usage import Usage, UsageLedger
from consilium.models.wrappers.recording import CallRecord, CallRecorder, RecordingModel

__all__ = [
    "CallRecord",
    "CallRecorder",
    "CallTag",
    "ChatModel",
    "GenerationSettings",
    "Message",
    "ModelOptions",
    "ModelRequest",
    "ModelResponse",
    "OutputInvalid",
    "OutputSchema",
    "RecordingModel",
    "Usage",
    "UsageLedger",
    "build_model",
    "for_run",
    "open_backend",
]
