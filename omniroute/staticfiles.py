"""WhiteNoise, made async-capable.

WhiteNoise's middleware is sync-only; a single sync-only middleware makes
Django run the whole ASGI request chain through thread hops (sync_to_async /
async_to_sync around every layer), which was a third of the gateway's CPU per
request. The lookup of a static file is an in-memory dict (or a file-system
check with autorefresh), so it is done inline in both modes. In async mode the
file is streamed by an async iterator: Django would otherwise warn and read
each chunk of a synchronous one through a thread hop.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from whitenoise.middleware import WhiteNoiseMiddleware


class AsyncWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response=None, *args, **kwargs):
        super().__init__(get_response, *args, **kwargs)
        self._is_async = iscoroutinefunction(get_response)
        if self._is_async:
            markcoroutinefunction(self)

    def _static_file(self, request):
        if self.autorefresh:
            return self.find_file(request.path_info)
        return self.files.get(request.path_info)

    def __call__(self, request):
        if self._is_async:
            return self.__acall__(request)
        return super().__call__(request)

    async def __acall__(self, request):
        static_file = self._static_file(request)
        if static_file is not None:
            response = self.serve(static_file, request)
            if response.streaming and not response.is_async:
                response.streaming_content = _async_chunks(response.streaming_content)
            return response
        return await self.get_response(request)


async def _async_chunks(chunks):
    """A local static file's chunks (small, page-cached reads) as an async iterator."""
    for chunk in chunks:
        yield chunk
