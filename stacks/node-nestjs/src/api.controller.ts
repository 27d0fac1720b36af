import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiService } from './api.service';
import {
  PerfLargePayloadQuery,
  PerfManyParamsQuery,
  PerfNestedQuery,
  PerfPostBody,
  PerfTestQuery,
  TxBody,
  UsersQuery,
} from './dto';

@Controller()
export class ApiController {
  constructor(private readonly api: ApiService) {}

  @Get('static')
  static() {
    return { status: 'ok', timestamp: Date.now() };
  }

  @Get('users')
  users(@Query() query: UsersQuery) {
    return this.api.users(query.limit);
  }

  @Get('perf-test')
  perfTest(@Query() query: PerfTestQuery) {
    return this.api.perfTest(query);
  }

  @Get('perf-minimal')
  perfMinimal() {
    return this.api.perfMinimal();
  }

  @Post('perf-post')
  @HttpCode(200)
  perfPost(@Body() body: PerfPostBody) {
    return this.api.perfPost(body);
  }

  @Get('perf-nested')
  perfNested(@Query() query: PerfNestedQuery) {
    return this.api.perfNested(query);
  }

  @Get('perf-large-payload')
  perfLargePayload(@Query() query: PerfLargePayloadQuery) {
    return this.api.perfLargePayload(query);
  }

  @Get('perf-many-params')
  perfManyParams(@Query() query: PerfManyParamsQuery) {
    return this.api.perfManyParams(query);
  }

  @Post('tx')
  @HttpCode(200)
  tx(@Body() body: TxBody) {
    return this.api.tx(body);
  }
}
