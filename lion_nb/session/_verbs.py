"""The operation verbs of `Branch`: thin adapters over `lion_nb.operations` (ADR-0021 D1).

Each verb builds its parameter object and imports its implementation inside the method, so
importing Branch loads no transport, parsing, action or reasoning-loop code, and operation
modules depend on Branch only for type checking. Lifecycle ownership (ADR-0021 D4):
``communicate``, ``operate`` and ``ReAct`` run under `observed_run`; ``chat`` and
``chat_and_record`` have no lifecycle; ``run`` (a generator) emits its own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, overload

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..models.imodel import iModel
    from ..protocols.messages import (
        ActionResponse,
        AssistantResponse,
        Instruction,
        RoledMessage,
    )

__all__ = ["BranchVerbs"]

_HOT: Any = None


def _hot() -> Any:
    """What ``chat`` and ``communicate`` call, imported on the first turn and then kept: an
    import statement in a method costs a microsecond on every call, and these two run on
    every turn."""
    global _HOT
    if _HOT is None:
        from types import SimpleNamespace

        from ..operations.chat_op import chat
        from ..operations.communicate_op import clamp_parse_retries, communicate
        from ..operations.types import ChatParam, ParseParam
        from ..runtime.lifecycle import observed_run

        _HOT = SimpleNamespace(
            chat=chat,
            communicate=communicate,
            clamp_parse_retries=clamp_parse_retries,
            ChatParam=ChatParam,
            ParseParam=ParseParam,
            observed_run=observed_run,
        )
    return _HOT


class BranchVerbs:
    """Mixed into `Branch`; every method delegates to its operation module."""

    # -- chat -------------------------------------------------------------------------------------
    @overload
    async def chat(
        self,
        instruction: Any = None,
        guidance: Any = None,
        context: Any = None,
        sender: Any = None,
        recipient: Any = None,
        request_fields: list[str] | dict[str, Any] | None = None,
        response_format: type[BaseModel] | BaseModel | None = None,
        progression: Any = None,
        imodel: iModel | None = None,
        tool_schemas: list[dict] | None = None,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] | None = None,
        plain_content: str | None = None,
        *,
        return_ins_res_message: Literal[True],
        include_token_usage_to_model: bool = False,
        files: list | None = None,
        **kwargs: Any,
    ) -> tuple[Instruction, AssistantResponse]: ...

    @overload
    async def chat(
        self,
        instruction: Any = None,
        guidance: Any = None,
        context: Any = None,
        sender: Any = None,
        recipient: Any = None,
        request_fields: list[str] | dict[str, Any] | None = None,
        response_format: type[BaseModel] | BaseModel | None = None,
        progression: Any = None,
        imodel: iModel | None = None,
        tool_schemas: list[dict] | None = None,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] | None = None,
        plain_content: str | None = None,
        return_ins_res_message: Literal[False] = False,
        include_token_usage_to_model: bool = False,
        files: list | None = None,
        **kwargs: Any,
    ) -> str: ...

    async def chat(
        self,
        instruction: Any = None,
        guidance: Any = None,
        context: Any = None,
        sender: Any = None,
        recipient: Any = None,
        request_fields: list[str] | dict[str, Any] | None = None,
        response_format: type[BaseModel] | BaseModel | None = None,
        progression: Any = None,
        imodel: iModel | None = None,
        tool_schemas: list[dict] | None = None,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] | None = None,
        plain_content: str | None = None,
        return_ins_res_message: bool = False,
        include_token_usage_to_model: bool = False,
        files: list | None = None,
        **kwargs: Any,
    ) -> tuple[Instruction, AssistantResponse] | str:
        """One unrecorded model call. Returns the response text, or the (instruction,
        response) pair when ``return_ins_res_message=True`` -- the flag decides, and the
        overloads say so (the original annotation claimed the pair for both)."""
        hot = _hot()
        param = hot.ChatParam(
            guidance=guidance,
            context=context,
            sender=sender,
            recipient=recipient,
            request_fields=request_fields,
            response_format=response_format,
            progression=progression,
            tool_schemas=tool_schemas,
            images=images,
            image_detail=image_detail,
            files=files,
            plain_content=plain_content,
            include_token_usage_to_model=include_token_usage_to_model,
            imodel=self.chat_model if imodel is None else imodel,
            imodel_kw=kwargs,
        )
        return await hot.chat(self, instruction, param, return_ins_res_message)

    async def chat_and_record(self, instruction: Any = None, **kwargs: Any) -> str:
        """`chat`, then record the instruction and the response, in that order. No run
        lifecycle, no rollback: a failed response append keeps the instruction."""
        kwargs.pop("return_ins_res_message", None)
        ins, res = await self.chat(instruction, return_ins_res_message=True, **kwargs)
        await self.msgs.a_add_message(instruction=ins)
        await self.msgs.a_add_message(assistant_response=res)
        return res.response

    # -- communicate ------------------------------------------------------------------------------
    async def communicate(
        self,
        instruction: Any = None,
        *,
        guidance: Any = None,
        context: Any = None,
        plain_content: str | None = None,
        sender: Any = None,
        recipient: Any = None,
        progression: Any = None,
        response_format: type[BaseModel] | None = None,
        request_fields: dict | list[str] | None = None,
        chat_model: iModel | None = None,
        parse_model: iModel | None = None,
        skip_validation: bool = False,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] | None = None,
        files: list | None = None,
        num_parse_retries: int = 3,
        clear_messages: bool = False,
        include_token_usage_to_model: bool = False,
        **kwargs: Any,
    ) -> Any:
        """A recorded model call (instruction and response appended), parsed into
        ``response_format`` or ``request_fields`` when given."""
        hot = _hot()
        num_parse_retries = hot.clamp_parse_retries(num_parse_retries)  # warns above 5, always
        chat_param = hot.ChatParam(
            guidance=guidance,
            context=context,
            sender=sender,
            recipient=recipient,
            response_format=response_format,
            request_fields=request_fields,
            progression=progression,
            images=images,
            image_detail=image_detail,
            files=files,
            plain_content=plain_content,
            include_token_usage_to_model=include_token_usage_to_model,
            imodel=self.chat_model if chat_model is None else chat_model,
            imodel_kw=kwargs,
        )
        parse_param = None
        if response_format is not None:
            parse_param = hot.ParseParam(
                response_format=response_format,
                imodel=self.parse_model if parse_model is None else parse_model,
                max_retries=num_parse_retries,
            )
        coro = hot.communicate(
            self,
            instruction,
            chat_param,
            parse_param,
            clear_messages=clear_messages,
            skip_validation=skip_validation,
            request_fields=request_fields,
        )
        return await hot.observed_run(self, coro, "communicate")

    # -- run (CLI agents) ----------------------------------------------------------------------------
    async def run(
        self,
        instruction: str = "",
        *,
        chat_model: iModel | None = None,
        guidance: Any = None,
        context: Any = None,
        sender: Any = None,
        recipient: Any = None,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] = "auto",
        files: list | None = None,
        stream_persist: bool = False,
        persist_dir: str | None = None,
        response_format: Any = None,
        **kwargs: Any,
    ) -> AsyncGenerator[RoledMessage, None]:
        """Stream a CLI agent's turn, recording and yielding each message as it arrives."""
        from ..operations.run_op import run
        from ..operations.types import RunParam

        extra: dict[str, Any] = {}
        if persist_dir is not None:
            extra["persist_dir"] = persist_dir
        if "snapshot_dir" in kwargs:
            extra["snapshot_dir"] = kwargs.pop("snapshot_dir")
        param = RunParam(
            guidance=guidance,
            context=context,
            sender=sender,
            recipient=recipient,
            images=images,
            image_detail=image_detail,
            files=files,
            response_format=response_format,
            stream_persist=stream_persist,
            imodel=chat_model,
            imodel_kw=kwargs,
            **extra,
        )
        async with aclosing(run(self, instruction, param)) as stream:
            async for message in stream:
                yield message

    # -- parse, act, operate, interpret ------------------------------------------------------------
    async def parse(
        self,
        text: str,
        response_format: type[BaseModel] | dict | None = None,
        *,
        request_type: type[BaseModel] | None = None,
        handle_validation: Literal["raise", "return_value", "return_none"] = "return_value",
        max_retries: int = 3,
        fuzzy_match: bool = True,
        similarity_threshold: float = 0.85,
        imodel: iModel | None = None,
        **kwargs: Any,
    ) -> Any:
        """Turn text into ``response_format`` (repairing JSON, asking the parse model to fix
        what cannot be repaired, up to ``max_retries`` times). Nothing is recorded."""
        from ..operations.parse_op import parse
        from ..operations.types import ParseParam

        param = ParseParam(
            response_format=response_format or request_type,
            fuzzy_match=fuzzy_match,
            handle_validation=handle_validation,
            similarity_threshold=similarity_threshold,
            imodel=self.parse_model if imodel is None else imodel,
            imodel_kw=kwargs,
            max_retries=max_retries,
        )
        return await parse(self, text, param)

    async def act(
        self,
        action_request: Any,
        *,
        strategy: Literal["concurrent", "sequential"] = "concurrent",
        suppress_errors: bool = True,
        verbose: bool = False,
    ) -> list[ActionResponse]:
        """Run tool calls and record each request and response; each call's error is
        contained in its response."""
        from ..operations.act_op import act
        from ..operations.types import ActionParam

        param = ActionParam(strategy=strategy, suppress_errors=suppress_errors, verbose=verbose)
        return await act(self, action_request, param)

    async def operate(self, instruction: Any = None, **kwargs: Any) -> Any:
        """One exchange through a Middle, then validation and tool calls (ADR-0022 of this
        project). Keywords: see `lion_nb.operations.operate_op.prepare_operate_kw`."""
        from ..operations.operate_op import operate, prepare_operate_kw
        from ..runtime.lifecycle import observed_run

        return await observed_run(
            self,
            operate(self, **prepare_operate_kw(self, instruction=instruction, **kwargs)),
            "operate",
        )

    async def interpret(
        self,
        text: str,
        domain: str | None = None,
        style: str | None = None,
        sample_writing: str | None = None,
        interpret_model: iModel | None = None,
        **kwargs: Any,
    ) -> str:
        """Rewrite a rough request into a clear, self-contained prompt. Nothing is recorded."""
        from ..operations.interpret_op import interpret
        from ..operations.types import InterpretParam

        param = InterpretParam(
            domain=domain,
            style=style,
            sample_writing=sample_writing,
            imodel=self.parse_model if interpret_model is None else interpret_model,
            imodel_kw=kwargs,
        )
        return await interpret(self, text, param)

    # -- ReAct ------------------------------------------------------------------------------------
    async def ReAct(self, instruct: Any, *, max_extensions: int | None = 3, **kwargs: Any) -> Any:
        """Reason, act with tools, and extend up to ``max_extensions`` rounds (default 3),
        then answer. Runs as one observed run; its inner turns are nested."""
        from ..operations.react import ReAct
        from ..runtime.lifecycle import observed_run

        return await observed_run(
            self, ReAct(self, instruct, max_extensions=max_extensions, **kwargs), "ReAct"
        )

    async def ReActStream(
        self, instruct: Any, *, max_extensions: int | None = 0, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        """ReAct yielding each round's analysis as it completes. No extension rounds unless
        asked for (``max_extensions`` defaults to 0 here, 3 on `ReAct`)."""
        from ..operations.react import ReActStream

        async with aclosing(
            ReActStream(self, instruct, max_extensions=max_extensions, **kwargs)
        ) as stream:
            async for item in stream:
                yield item
