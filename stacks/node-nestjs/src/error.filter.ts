import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DatabaseError } from 'pg';

// Every error becomes the contract's {"error": "..."} body (Nest's default body is
// {"statusCode", "message", "error"}).
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger(ErrorFilter.name);

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    let status: number = HttpStatus.INTERNAL_SERVER_ERROR;
    let error = 'internal server error';

    if (exception instanceof HttpException) {
      // ValidationPipe's BadRequestException carries a list of messages
      status = exception.getStatus();
      const body = exception.getResponse();
      const message = typeof body === 'string' ? body : (body as { message?: unknown }).message;
      error = Array.isArray(message) ? message.join('; ') : String(message ?? exception.message);
    } else if (exception instanceof DatabaseError && exception.code?.startsWith('22')) {
      // SQLSTATE class 22 (data exception): malformed date, uuid, array literal, number out of range
      status = HttpStatus.BAD_REQUEST;
      error = exception.message;
    } else if (isClientError(exception)) {
      // body-parser errors that Nest does not map itself (e.g. 413 entity too large)
      status = HttpStatus.BAD_REQUEST;
      error = exception.message;
    } else {
      this.logger.error(exception);
    }

    if (status >= 500 && exception instanceof HttpException) this.logger.error(exception);
    httpAdapter.reply(host.switchToHttp().getResponse(), { error }, status);
  }
}

function isClientError(err: unknown): err is Error & { status: number } {
  const status = (err as { status?: unknown } | null)?.status;
  return err instanceof Error && typeof status === 'number' && status >= 400 && status < 500;
}
